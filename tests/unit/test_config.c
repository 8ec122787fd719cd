/*
 * test_config.c - campaign configuration: good documents parse to the right
 * values, and every bad one is refused with the exact message a user reads.
 */
#include "tests/unit/suites.h"

#include <errno.h>
#include <glob.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/record.h"
#include "common/util.h"
#include "harness/campaign/config.h"
#include "vboard/vboard.h"

/* Test documents are written with ' for " to stay readable. */
static char *J(const char *s)
{
	static char buf[8192];
	size_t i;

	for (i = 0; s[i] && i < sizeof(buf) - 1; i++)
		buf[i] = s[i] == '\'' ? '"' : s[i];
	buf[i] = 0;
	return buf;
}

#define MIN_BOARD "{'name':'b1','relay':{'driver':'sim'}}"
#define DOC(boards) "{'campaign':'t','cycles':3,'boards':[" boards "]}"
#define DOC_D(defaults, boards) "{'campaign':'t','cycles':3,'defaults':" defaults ",'boards':[" boards "]}"

static void test_minimal(void)
{
	struct campaign_cfg c;
	char err[512];
	struct board_cfg *b;
	json_object *v;

	CU_ASSERT_EQUAL_FATAL(config_parse(J(DOC(MIN_BOARD)), "min.json", &c, err, sizeof(err)), 0);
	CU_ASSERT_STRING_EQUAL(c.name, "t");
	CU_ASSERT_STRING_EQUAL(c.path, "min.json");
	CU_ASSERT_EQUAL(c.cycles, 3);
	CU_ASSERT_EQUAL(c.seed, 1);
	CU_ASSERT_STRING_EQUAL(c.listen, "127.0.0.1:0");
	CU_ASSERT_EQUAL_FATAL(c.nboards, 1);
	b = &c.boards[0];
	CU_ASSERT_STRING_EQUAL(b->name, "b1");
	CU_ASSERT_STRING_EQUAL(b->relay_driver, "sim");
	CU_ASSERT_STRING_EQUAL(b->backend, "sim");
	CU_ASSERT_EQUAL(b->record_size, 4096);
	CU_ASSERT_EQUAL(b->pattern, PC_PAT_SEQUENTIAL);
	CU_ASSERT_EQUAL_FATAL(b->nmodes, 2);
	CU_ASSERT_EQUAL(b->modes[0], PC_MODE_FUA);
	CU_ASSERT_EQUAL(b->modes[1], PC_MODE_FLUSH);
	CU_ASSERT_EQUAL(b->records_per_cycle, 200);
	CU_ASSERT_EQUAL(b->flush_every, 8);
	CU_ASSERT_EQUAL(b->queue_depth, 4);
	/* the default plan is the mix: each mode's flushes or FUA writes in
	 * turn with a random instant in [5, 60] ms (modes fua, flush) */
	CU_ASSERT_EQUAL(b->cut, CUT_MIX);
	CU_ASSERT_EQUAL(b->cut_min, 5);
	CU_ASSERT_EQUAL(b->cut_max, 60);
	{
		static const enum cut_plan want[] = { CUT_FUA, CUT_FLUSH, CUT_RANDOM, CUT_RANDOM, CUT_FUA, CUT_FLUSH };
		uint32_t lo, hi;

		for (uint32_t cyc = 1; cyc <= 6; cyc++)
			CU_ASSERT_EQUAL(config_cycle_cut(b, cyc, &lo, &hi), want[cyc - 1]);
		config_cycle_cut(b, 2, &lo, &hi);
		CU_ASSERT(lo == 1 && hi == 25);	/* 200 records, a flush every 8 */
		config_cycle_cut(b, 3, &lo, &hi);
		CU_ASSERT(lo == 5 && hi == 60);
	}
	CU_ASSERT_EQUAL(b->boot_timeout_ms, 10000);
	CU_ASSERT_EQUAL(b->boot_retries, 2);
	CU_ASSERT_EQUAL(b->verify_timeout_ms, 60000);
	CU_ASSERT_EQUAL(b->work_timeout_ms, 60000);
	CU_ASSERT_EQUAL(b->off_ms, 20);
	/* the device section is borrowed from the resolved root, defaults filled in */
	CU_ASSERT_PTR_NOT_NULL_FATAL(b->device);
	CU_ASSERT_TRUE(json_object_object_get_ex(b->device, "size", &v) && json_object_get_int64(v) == 4 << 20);
	CU_ASSERT_TRUE(json_object_object_get_ex(b->device, "profile", &v) &&
		       strcmp(json_object_get_string(v), "honest") == 0);
	CU_ASSERT_TRUE(json_object_object_get_ex(b->device, "rate", &v) && json_object_get_double(v) == 0.01);
	/* the most a HELLO may claim; the resolved document (campaign.json) has
	 * it only when it was given, so older results folders still resume */
	CU_ASSERT_EQUAL(b->max_region_bytes, CFG_DEFAULT_MAX_REGION);
	CU_ASSERT_FALSE(json_object_object_get_ex(b->device, "max_region_bytes", NULL));
	CU_ASSERT_TRUE(json_object_object_get_ex(b->relay, "driver", &v) &&
		       strcmp(json_object_get_string(v), "sim") == 0);
	/* INCOMPLETE above 10% INFRA_ERROR; like max_region_bytes, recorded only when given */
	CU_ASSERT_DOUBLE_EQUAL(c.incomplete_infra_share, 0.10, 1e-12);
	CU_ASSERT_FALSE(json_object_object_get_ex(c.root, "incomplete_infra_share", NULL));
	config_free(&c);
	config_free(&c);	/* twice is fine */
	CU_ASSERT_PTR_NULL(c.root);
}

static void test_full_values(void)
{
	struct campaign_cfg c;
	char err[512];
	struct board_cfg *b;

	CU_ASSERT_EQUAL_FATAL(config_parse(J("{'campaign':'x.y-z_1','cycles':10000000,'seed':42,"
		"'listen':'0.0.0.0:7878','boards':[{'name':'p','relay':{'driver':'sim','boot_delay_ms':5},"
		"'device':{'backend':'sim','record_size':8192,'size':'16M','profile':'lying-flush','program_us':1,"
		"'cache_sectors':1,'seed':9,'rate':1},'pattern':'random','modes':['fua+flush','journal','none'],"
		"'records_per_cycle':2046,'flush_every':1,'queue_depth':32,"
		"'cut':{'at':'acks','acks':[1,10000000]},'boot_timeout_ms':1,'boot_retries':100,"
		"'verify_timeout_ms':7,'work_timeout_ms':8,'off_ms':600000}]}"), "full", &c, err, sizeof(err)), 0);
	b = &c.boards[0];
	CU_ASSERT_EQUAL(c.cycles, 10000000);
	CU_ASSERT_EQUAL(c.seed, 42);
	CU_ASSERT_STRING_EQUAL(c.listen, "0.0.0.0:7878");
	CU_ASSERT_EQUAL(b->record_size, 8192);
	CU_ASSERT_EQUAL(b->pattern, PC_PAT_RANDOM);
	CU_ASSERT_EQUAL(b->nmodes, 3);
	CU_ASSERT_EQUAL(b->modes[0], PC_MODE_FUA_FLUSH);
	CU_ASSERT_EQUAL(b->modes[2], PC_MODE_NONE);
	/* (16M / 512 - 16) / 16 = 2047 slots: 2046 records fit */
	CU_ASSERT_EQUAL(b->records_per_cycle, 2046);
	CU_ASSERT_EQUAL(b->cut, CUT_ACKS);
	CU_ASSERT_EQUAL(b->cut_min, 1);
	CU_ASSERT_EQUAL(b->cut_max, 10000000);
	CU_ASSERT_EQUAL(b->off_ms, 600000);
	CU_ASSERT_EQUAL(b->work_timeout_ms, 8);
	config_free(&c);
}

/* incomplete_infra_share: a share 0..1, kept in campaign.json as written */
static void test_cut_io_plans(void)
{
	struct campaign_cfg c;
	char err[512];
	json_object *cut, *v;

	CU_ASSERT_EQUAL_FATAL(config_parse(J(DOC(
		"{'name':'f','relay':{'driver':'sim'},'modes':['flush','journal'],'records_per_cycle':40,'flush_every':4,"
		"'cut':{'at':'flush'}},"
		"{'name':'u','relay':{'driver':'sim'},'modes':['fua','fua+flush','journal'],'records_per_cycle':40,"
		"'flush_every':3,'cut':{'at':'fua','nth':[2,9],'delay_us':250}}")), "io.json", &c, err, sizeof(err)), 0);
	/* the default range: every flush the fewest-flushing mode issues (journal: 40 in groups of 5) */
	CU_ASSERT_EQUAL(c.boards[0].cut, CUT_FLUSH);
	CU_ASSERT_EQUAL(c.boards[0].cut_min, 1);
	CU_ASSERT_EQUAL(c.boards[0].cut_max, 8);
	CU_ASSERT_EQUAL(c.boards[0].cut_delay_us, 0);
	CU_ASSERT_EQUAL(c.boards[1].cut, CUT_FUA);
	CU_ASSERT_EQUAL(c.boards[1].cut_min, 2);
	CU_ASSERT_EQUAL(c.boards[1].cut_max, 9);
	CU_ASSERT_EQUAL(c.boards[1].cut_delay_us, 250);
	/* resolved: what campaign.json says */
	cut = json_object_object_get(json_object_array_get_idx(json_object_object_get(c.root, "boards"), 1), "cut");
	CU_ASSERT_STRING_EQUAL(json_object_to_json_string_ext(cut, JSON_C_TO_STRING_PLAIN),
			       "{\"at\":\"fua\",\"nth\":[2,9],\"delay_us\":250}");
	CU_ASSERT_PTR_NOT_NULL(v = json_object_object_get(cut, "nth"));
	config_free(&c);
	CU_ASSERT_STRING_EQUAL(config_cut_name(CUT_RANDOM), "random");
	CU_ASSERT_STRING_EQUAL(config_cut_name(CUT_FUA), "fua");
	/* what a cycle issues, by mode */
	CU_ASSERT_EQUAL(config_cut_ops(CUT_FLUSH, PC_MODE_FLUSH, 40, 4), 10);
	CU_ASSERT_EQUAL(config_cut_ops(CUT_FLUSH, PC_MODE_FLUSH, 41, 4), 11);
	CU_ASSERT_EQUAL(config_cut_ops(CUT_FLUSH, PC_MODE_JOURNAL, 41, 4), 9);
	CU_ASSERT_EQUAL(config_cut_ops(CUT_FLUSH, PC_MODE_FUA_FLUSH, 41, 4), 0);
	CU_ASSERT_EQUAL(config_cut_ops(CUT_FUA, PC_MODE_FUA, 41, 4), 41);
	CU_ASSERT_EQUAL(config_cut_ops(CUT_FUA, PC_MODE_FUA_FLUSH, 41, 4), 41);
	/* journal: a commit per group of flush_every + 1, none for a group of one */
	CU_ASSERT_EQUAL(config_cut_ops(CUT_FUA, PC_MODE_JOURNAL, 41, 4), 8);
	CU_ASSERT_EQUAL(config_cut_ops(CUT_FUA, PC_MODE_JOURNAL, 42, 4), 9);
	CU_ASSERT_EQUAL(config_cut_ops(CUT_FUA, PC_MODE_JOURNAL, 1, 4), 0);
	CU_ASSERT_EQUAL(config_cut_ops(CUT_FUA, PC_MODE_FLUSH, 41, 4), 0);
	CU_ASSERT_EQUAL(config_cut_ops(CUT_FUA, PC_MODE_RELWR, 41, 4), 0);
	CU_ASSERT_EQUAL(config_cut_ops(CUT_FLUSH, PC_MODE_JOURNAL, 1048576, 1048576), 1);
	CU_ASSERT_EQUAL(config_cut_ops(CUT_RANDOM, PC_MODE_FLUSH, 40, 4), 0);
}

static void test_infra_share(void)
{
	static const struct { const char *doc; double want; const char *text; } ok[] = {
		{ "{'campaign':'t','cycles':3,'incomplete_infra_share':0.05,'boards':[" MIN_BOARD "]}", 0.05, "0.05" },
		{ "{'campaign':'t','cycles':3,'incomplete_infra_share':0,'boards':[" MIN_BOARD "]}", 0.0, "0" },
		{ "{'campaign':'t','cycles':3,'incomplete_infra_share':1,'boards':[" MIN_BOARD "]}", 1.0, "1" },
		{ "{'campaign':'t','cycles':3,'incomplete_infra_share':0.25,'boards':[" MIN_BOARD "]}", 0.25, "0.25" },
	};

	for (size_t i = 0; i < PC_ARRAY_SIZE(ok); i++) {
		struct campaign_cfg c;
		char err[512] = "";
		json_object *v;

		CU_ASSERT_EQUAL_FATAL(config_parse(J(ok[i].doc), "share.json", &c, err, sizeof(err)), 0);
		CU_ASSERT_DOUBLE_EQUAL(c.incomplete_infra_share, ok[i].want, 1e-12);
		CU_ASSERT_TRUE_FATAL(json_object_object_get_ex(c.root, "incomplete_infra_share", &v));
		CU_ASSERT_STRING_EQUAL(json_object_to_json_string(v), ok[i].text);
		config_free(&c);
	}
}

/* defaults merge into each board, section by section; board keys win */
static void test_defaults(void)
{
	struct campaign_cfg c;
	char err[512];
	json_object *v, *relay;

	CU_ASSERT_EQUAL_FATAL(config_parse(J(DOC_D(
		"{'relay':{'driver':'sim','boot_delay_ms':7},'device':{'size':'8M','profile':'lying-flush'},"
		"'records_per_cycle':100,'modes':['flush'],'cut':{'window_ms':[1,2]}}",
		"{'name':'a'},"
		"{'name':'b','device':{'profile':'honest'},'records_per_cycle':50,'cut':{'at':'acks','acks':[3,4]}},"
		"{'name':'c','relay':{'driver':'command','on':'true','off':'true'}}")),
		"defaults.json", &c, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL_FATAL(c.nboards, 3);
	CU_ASSERT_EQUAL(c.boards[0].records_per_cycle, 100);
	CU_ASSERT_EQUAL(c.boards[1].records_per_cycle, 50);
	CU_ASSERT_EQUAL(c.boards[0].nmodes, 1);
	CU_ASSERT_EQUAL(c.boards[0].modes[0], PC_MODE_FLUSH);
	CU_ASSERT_EQUAL(c.boards[0].cut, CUT_RANDOM);
	CU_ASSERT_EQUAL(c.boards[0].cut_min, 1);
	CU_ASSERT_EQUAL(c.boards[0].cut_max, 2);
	/* a different cut kind replaces the default's section */
	CU_ASSERT_EQUAL(c.boards[1].cut, CUT_ACKS);
	CU_ASSERT_EQUAL(c.boards[1].cut_min, 3);
	CU_ASSERT_EQUAL(c.boards[1].cut_max, 4);
	CU_ASSERT_TRUE(json_object_object_get_ex(c.boards[0].device, "profile", &v) &&
		       strcmp(json_object_get_string(v), "lying-flush") == 0);
	CU_ASSERT_TRUE(json_object_object_get_ex(c.boards[1].device, "profile", &v) &&
		       strcmp(json_object_get_string(v), "honest") == 0);
	/* merged: size from defaults, profile from the board */
	CU_ASSERT_TRUE(json_object_object_get_ex(c.boards[1].device, "size", &v) &&
		       json_object_get_int64(v) == 8 << 20);
	relay = c.boards[0].relay;
	CU_ASSERT_TRUE(json_object_object_get_ex(relay, "boot_delay_ms", &v) && json_object_get_int(v) == 7);
	/* another driver replaces the relay section: no boot_delay_ms leaks into it */
	CU_ASSERT_STRING_EQUAL(c.boards[2].relay_driver, "command");
	CU_ASSERT_FALSE(json_object_object_get_ex(c.boards[2].relay, "boot_delay_ms", &v));
	/* boards do not share json objects */
	CU_ASSERT_PTR_NOT_EQUAL(c.boards[0].relay, c.boards[1].relay);
	config_free(&c);
}

/* The resolved document is a configuration that loads to the same thing. */
static void test_roundtrip(void)
{
	struct campaign_cfg c, d;
	char err[512], *text;

	CU_ASSERT_EQUAL_FATAL(config_parse(J(DOC_D("{'device':{'size':'8M'},'queue_depth':2}",
		"{'name':'a','relay':{'driver':'sim'}},{'name':'p','relay':{'driver':'sim'},"
		"'device':{'backend':'posix','path':'/dev/mmcblk0p3','part':'Samsung 8GB'}}")),
		"rt", &c, err, sizeof(err)), 0);
	text = strdup(json_object_to_json_string_ext(c.root, JSON_C_TO_STRING_PLAIN));
	CU_ASSERT_PTR_NULL(strstr(text, "defaults"));
	CU_ASSERT_EQUAL_FATAL(config_parse(text, "rt2", &d, err, sizeof(err)), 0);
	CU_ASSERT_STRING_EQUAL(json_object_to_json_string_ext(d.root, JSON_C_TO_STRING_PLAIN), text);
	CU_ASSERT_STRING_EQUAL(d.boards[1].backend, "posix");
	CU_ASSERT_EQUAL(d.boards[1].queue_depth, 2);
	free(text);
	config_free(&c);
	config_free(&d);
}

struct bad_case {
	const char *what;
	const char *doc;
	const char *msg;	/* expected substring of the error */
};

static const struct bad_case bad_cases[] = {
	{ "unknown board key with suggestion", DOC(MIN_BOARD ",{'name':'b2','relay':{'driver':'sim'},"
	  "'recods_per_cycle':5}"), "bad.json: boards[1]: unknown key 'recods_per_cycle' (did you mean 'records_per_cycle'?)" },
	{ "unknown key, nothing close", DOC("{'name':'b','relay':{'driver':'sim'},'colour':1}"),
	  "bad.json: boards[0]: unknown key 'colour'" },
	{ "unknown top key", "{'campaign':'t','cycles':3,'cylces':4,'boards':[" MIN_BOARD "]}",
	  "bad.json: unknown key 'cylces' (did you mean 'cycles'?)" },
	{ "unknown device key", DOC("{'name':'b','relay':{'driver':'sim'},'device':{'profle':'honest'}}"),
	  "boards[0].device: unknown key 'profle' (did you mean 'profile'?)" },
	{ "unknown defaults key", DOC_D("{'flush_evry':3}", MIN_BOARD),
	  "bad.json: defaults: unknown key 'flush_evry' (did you mean 'flush_every'?)" },
	{ "name in defaults", DOC_D("{'name':'x'}", MIN_BOARD), "defaults: 'name' cannot have a default" },
	{ "cut key of the other kind", DOC("{'name':'b','relay':{'driver':'sim'},'cut':{'at':'random','acks':[1,2]}}"),
	  "boards[0].cut: unknown key 'acks' (only with \"at\": \"acks\")" },
	{ "wrong type", DOC("{'name':'b','relay':{'driver':'sim'},'queue_depth':'4'}"),
	  "boards[0].queue_depth: expected an integer (1..32), got string" },
	{ "double for an integer", "{'campaign':'t','cycles':60.5,'boards':[" MIN_BOARD "]}",
	  "bad.json: cycles: expected an integer (1..10000000), got double" },
	{ "out of range", DOC("{'name':'b','relay':{'driver':'sim'},'queue_depth':33}"),
	  "boards[0].queue_depth: 33 is out of range 1..32" },
	{ "negative", DOC("{'name':'b','relay':{'driver':'sim'},'off_ms':-1}"),
	  "boards[0].off_ms: -1 is out of range 0..600000" },
	{ "out of range from defaults", DOC_D("{'queue_depth':64}", MIN_BOARD),
	  "boards[0].queue_depth (from defaults): 64 is out of range 1..32" },
	{ "cycles zero", "{'campaign':'t','cycles':0,'boards':[" MIN_BOARD "]}", "cycles: 0 is out of range 1..10000000" },
	{ "missing cycles", "{'campaign':'t','boards':[" MIN_BOARD "]}", "bad.json: missing required key 'cycles'" },
	{ "missing campaign", "{'cycles':1,'boards':[" MIN_BOARD "]}", "bad.json: missing required key 'campaign'" },
	{ "bad campaign name", "{'campaign':'a b','cycles':1,'boards':[" MIN_BOARD "]}",
	  "campaign: 'a b' is not a valid name" },
	{ "no boards", "{'campaign':'t','cycles':1,'boards':[]}", "boards: expected 1 to 256 boards, got 0" },
	{ "missing board name", DOC("{'relay':{'driver':'sim'}}"), "boards[0]: missing required key 'name'" },
	{ "duplicate board name", DOC(MIN_BOARD "," MIN_BOARD),
	  "boards[1].name: 'b1' is already the name of boards[0]" },
	{ "missing relay", DOC("{'name':'b'}"), "boards[0]: missing required key 'relay'" },
	{ "unknown mode", DOC("{'name':'b','relay':{'driver':'sim'},'modes':['fua','fsync']}"),
	  "boards[0].modes[1]: unknown mode 'fsync'" },
	{ "unknown mode, suggestion", DOC("{'name':'b','relay':{'driver':'sim'},'modes':['flsuh']}"),
	  "unknown mode 'flsuh' (did you mean 'flush'?)" },
	{ "gen0 is not a mode", DOC("{'name':'b','relay':{'driver':'sim'},'modes':['gen0']}"),
	  "unknown mode 'gen0'" },
	{ "too many modes", DOC("{'name':'b','relay':{'driver':'sim'},'modes':['fua','fua','fua','fua','fua',"
	  "'fua','fua','fua','fua']}"), "boards[0].modes: expected 1 to 8 modes, got 9" },
	{ "unknown relay driver", DOC("{'name':'b','relay':{'driver':'usbrelay'}}"),
	  "boards[0].relay.driver: unknown driver 'usbrelay' (known: sim command" },
	{ "relay driver check", DOC("{'name':'b','relay':{'driver':'sim','bogus':1}}"),
	  "boards[0].relay: unknown key 'bogus'" },
	{ "command relay without on", DOC("{'name':'b','relay':{'driver':'command','off':'x'}}"),
	  "boards[0].relay: " },
	{ "bad sim profile", DOC("{'name':'b','relay':{'driver':'sim'},'device':{'profile':'lying'}}"),
	  "boards[0].device.profile: " },
	{ "unknown backend", DOC("{'name':'b','relay':{'driver':'sim'},'device':{'backend':'nbd'}}"),
	  "boards[0].device.backend: unknown backend 'nbd' (known: sim posix)" },
	{ "sim key on posix", DOC("{'name':'b','relay':{'driver':'sim'},'device':{'backend':'posix','profile':'x'}}"),
	  "boards[0].device.profile: only for backend \"sim\"" },
	{ "posix key not a string", DOC("{'name':'b','relay':{'driver':'sim'},'device':{'backend':'posix','path':3}}"),
	  "boards[0].device.path: expected a string" },
	{ "record size not a multiple", DOC("{'name':'b','relay':{'driver':'sim'},'device':{'record_size':1000}}"),
	  "boards[0].device.record_size: 1000 is not a multiple of 512" },
	{ "record size too big", DOC("{'name':'b','relay':{'driver':'sim'},'device':{'record_size':2097152}}"),
	  "boards[0].device.record_size: 2097152 is out of range 512..1048576" },
	{ "region limit too big", DOC("{'name':'b','relay':{'driver':'sim'},'device':{'max_region_bytes':'1T'}}"),
	  "boards[0].device.max_region_bytes: 1099511627776 bytes is out of range 16K..64G" },
	{ "region limit not bytes", DOC("{'name':'b','relay':{'driver':'sim'},'device':{'max_region_bytes':true}}"),
	  "boards[0].device.max_region_bytes: expected bytes" },
	{ "sim larger than the region limit",
	  DOC("{'name':'b','relay':{'driver':'sim'},'device':{'size':'8M','max_region_bytes':'4M'}}"),
	  "boards[0].device.size: 8M is more than device.max_region_bytes (4M)" },
	{ "bad size text", DOC("{'name':'b','relay':{'driver':'sim'},'device':{'size':'4Q'}}"),
	  "boards[0].device.size: expected bytes, as an integer or a string like \"4M\", got '4Q'" },
	{ "size too small", DOC("{'name':'b','relay':{'driver':'sim'},'device':{'size':4096}}"),
	  "boards[0].device.size: region of 4096 bytes is too small" },
	{ "rate out of range", DOC("{'name':'b','relay':{'driver':'sim'},'device':{'rate':1.5}}"),
	  "boards[0].device.rate: 1.5 is out of range 0..1" },
	{ "keep_inputs out of range", DOC("{'name':'b','relay':{'driver':'sim'},'device':{'keep_inputs':1001}}"),
	  "boards[0].device.keep_inputs: 1001 is out of range 0..1000" },
	{ "keep_inputs needs the sim relay",
	  DOC("{'name':'b','relay':{'driver':'command','on':'true','off':'true'},'device':{'keep_inputs':3}}"),
	  "boards[0].device.keep_inputs: only the sim relay starts the agent with --sim-keep-inputs" },
	{ "records over the slots", DOC("{'name':'b','relay':{'driver':'sim'},'records_per_cycle':5000}"),
	  "boards[0].records_per_cycle: 5000 exceeds the 1022 slots of a 4M sim device with 4096-byte records" },
	{ "records over the slots, by one", DOC("{'name':'b','relay':{'driver':'sim'},'records_per_cycle':1023}"),
	  "1023 exceeds the 1022 slots" },
	{ "pattern", DOC("{'name':'b','relay':{'driver':'sim'},'pattern':'zigzag'}"),
	  "boards[0].pattern: unknown pattern 'zigzag' (known: sequential random)" },
	{ "cut plan", DOC("{'name':'b','relay':{'driver':'sim'},'cut':{'at':'flash'}}"),
	  "boards[0].cut.at: unknown cut plan 'flash' (did you mean 'flush'?) (known: random acks flush fua mix)" },
	{ "cut plan, nothing close", DOC("{'name':'b','relay':{'driver':'sim'},'cut':{'at':'whenever'}}"),
	  "boards[0].cut.at: unknown cut plan 'whenever' (known: random acks flush fua mix)" },
	{ "flush plan: window_ms", DOC("{'name':'b','relay':{'driver':'sim'},'modes':['flush'],"
	  "'cut':{'at':'flush','window_ms':[1,2]}}"),
	  "boards[0].cut: unknown key 'window_ms' (only with \"at\": \"random\" or \"mix\")" },
	{ "fua plan: acks", DOC("{'name':'b','relay':{'driver':'sim'},'modes':['fua'],'cut':{'at':'fua','acks':[1,2]}}"),
	  "boards[0].cut: unknown key 'acks' (only with \"at\": \"acks\")" },
	{ "fua plan: a misspelt key", DOC("{'name':'b','relay':{'driver':'sim'},'modes':['fua'],'cut':{'at':'fua','delay_ms':1}}"),
	  "boards[0].cut: unknown key 'delay_ms' (did you mean 'delay_us'?)" },
	{ "random plan: nth", DOC("{'name':'b','relay':{'driver':'sim'},'cut':{'nth':[1,2]}}"),
	  "boards[0].cut: unknown key 'nth' (only with \"at\": \"flush\" or \"fua\")" },
	{ "flush plan, a mode that never flushes", DOC("{'name':'b','relay':{'driver':'sim'},'modes':['flush','fua'],"
	  "'cut':{'at':'flush'}}"),
	  "boards[0].cut.at: mode fua issues no cache flushes: the plan \"flush\" needs modes that do (flush, journal)" },
	{ "fua plan, default modes", DOC("{'name':'b','relay':{'driver':'sim'},'cut':{'at':'fua'}}"),
	  "boards[0].cut.at: mode flush issues no FUA writes: the plan \"fua\" needs modes that do (fua, fua+flush, journal)" },
	{ "fua plan, relwr", DOC("{'name':'b','relay':{'driver':'sim'},'modes':['relwr'],'cut':{'at':'fua'}}"),
	  "boards[0].cut.at: mode relwr issues no FUA writes" },
	{ "flush nth past the flushes of a cycle", DOC("{'name':'b','relay':{'driver':'sim'},'modes':['flush','journal'],"
	  "'records_per_cycle':40,'flush_every':4,'cut':{'at':'flush','nth':[2,9]}}"),
	  "boards[0].cut.nth: 9 is more than the 8 cache flushes a cycle of mode journal issues "
	  "(records_per_cycle 40, flush_every 4): lower nth" },
	{ "fua nth past the commits of a journal cycle", DOC("{'name':'b','relay':{'driver':'sim'},'modes':['journal'],"
	  "'records_per_cycle':11,'flush_every':4,'cut':{'at':'fua','nth':[1,3]}}"),
	  "boards[0].cut.nth: 3 is more than the 2 FUA writes a cycle of mode journal issues" },
	{ "nth zero", DOC("{'name':'b','relay':{'driver':'sim'},'modes':['fua'],'cut':{'at':'fua','nth':[0,3]}}"),
	  "boards[0].cut.nth[0]: 0 is out of range 1..10000000" },
	{ "nth reversed", DOC("{'name':'b','relay':{'driver':'sim'},'modes':['fua'],'cut':{'at':'fua','nth':[5,3]}}"),
	  "boards[0].cut.nth: min 5 is above max 3" },
	{ "nth shape", DOC("{'name':'b','relay':{'driver':'sim'},'modes':['fua'],'cut':{'at':'fua','nth':3}}"),
	  "boards[0].cut.nth: expected [min, max], got int" },
	{ "delay_us too long", DOC("{'name':'b','relay':{'driver':'sim'},'modes':['fua'],'cut':{'at':'fua','delay_us':1000001}}"),
	  "boards[0].cut.delay_us: 1000001 is out of range 0..1000000" },
	{ "delay_us past the work timeout", DOC("{'name':'b','relay':{'driver':'sim'},'modes':['fua'],'work_timeout_ms':100,"
	  "'cut':{'at':'fua','delay_us':200000}}"),
	  "boards[0].cut.delay_us: 200000 us is not within work_timeout_ms (100)" },
	{ "cut window reversed", DOC("{'name':'b','relay':{'driver':'sim'},'cut':{'at':'random','window_ms':[60,5]}}"),
	  "boards[0].cut.window_ms: min 60 is above max 5" },
	{ "cut window shape", DOC("{'name':'b','relay':{'driver':'sim'},'cut':{'window_ms':[1]}}"),
	  "boards[0].cut.window_ms: expected [min, max]" },
	{ "cut window past the work timeout", DOC("{'name':'b','relay':{'driver':'sim'},'work_timeout_ms':1000,"
	  "'cut':{'window_ms':[5,2000]}}"), "boards[0].cut.window_ms: the window ends at 2000 ms, after work_timeout_ms" },
	{ "cut acks zero", DOC("{'name':'b','relay':{'driver':'sim'},'cut':{'at':'acks','acks':[0,5]}}"),
	  "boards[0].cut.acks[0]: 0 is out of range 1..10000000" },
	{ "infra share as a percentage", "{'campaign':'t','cycles':1,'incomplete_infra_share':10,'boards':[" MIN_BOARD "]}",
	  "bad.json: incomplete_infra_share: 10 is out of range 0..1 (a share of the cycles: 0.1 is 10%)" },
	{ "infra share negative", "{'campaign':'t','cycles':1,'incomplete_infra_share':-0.1,'boards':[" MIN_BOARD "]}",
	  "bad.json: incomplete_infra_share: -0.1 is out of range 0..1" },
	{ "infra share as text", "{'campaign':'t','cycles':1,'incomplete_infra_share':'10%','boards':[" MIN_BOARD "]}",
	  "bad.json: incomplete_infra_share: expected a number from 0 to 1 (the share of a device's cycles that "
	  "may be INFRA_ERROR: 0.1 is 10%), got string" },
	{ "infra share is top-level only", DOC_D("{'incomplete_infra_share':0.2}", MIN_BOARD),
	  "bad.json: defaults: unknown key 'incomplete_infra_share'" },
	{ "infra share typo", "{'campaign':'t','cycles':1,'incomplete_infra_shar':0.2,'boards':[" MIN_BOARD "]}",
	  "bad.json: unknown key 'incomplete_infra_shar' (did you mean 'incomplete_infra_share'?)" },
	{ "listen", "{'campaign':'t','cycles':1,'listen':'nowhere','boards':[" MIN_BOARD "]}",
	  "bad.json: listen: expected \"host:port\"" },
	{ "top not an object", "[1,2]", "bad.json: expected a JSON object at the top, got array" },
	{ "syntax error line:col", "{\n  'campaign': 't',\n  'cycles': 6x0\n}", "bad.json:3:14: JSON syntax error: " },
	{ "syntax error, trailing comma", "{'campaign': 't',\n}", "bad.json:2:1: JSON syntax error: " },
	{ "unterminated", "{'campaign': 't',\n 'cycles'", "bad.json:2:10: JSON syntax error: unexpected end of file" },
	{ "trailing garbage", DOC(MIN_BOARD) "\n\n  x", "bad.json:3:3: JSON syntax error: trailing data after the JSON document" },
	{ "second document", DOC(MIN_BOARD) DOC(MIN_BOARD), "JSON syntax error: trailing data" },
	{ "empty file", "", "bad.json: empty file" },
	{ "blank file", " \n\t\n", "bad.json: empty file" },
};

static void test_bad(void)
{
	for (size_t i = 0; i < PC_ARRAY_SIZE(bad_cases); i++) {
		const struct bad_case *t = &bad_cases[i];
		struct campaign_cfg c;
		char err[512] = "";
		int rc = config_parse(J(t->doc), "bad.json", &c, err, sizeof(err));

		if (rc != -EINVAL || !strstr(err, t->msg))
			fprintf(stderr, "\n  case '%s': rc %d, got \"%s\"\n  want \"%s\"\n", t->what, rc, err, t->msg);
		CU_ASSERT_EQUAL(rc, -EINVAL);
		CU_ASSERT_PTR_NOT_NULL(strstr(err, t->msg));
		/* a failed parse leaves nothing to free */
		CU_ASSERT_PTR_NULL(c.root);
		CU_ASSERT_PTR_NULL(c.boards);
	}
}

/* Stop rules, the target and the disk floor: defaults, values, the resolved
 * document (written out only when given: older campaign.json still match). */
static void test_stop_rules(void)
{
	struct campaign_cfg c;
	char err[512];
	json_object *v;

	CU_ASSERT_EQUAL_FATAL(config_parse(J(DOC(MIN_BOARD)), "s.json", &c, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(c.boards[0].stop_boot_fails, CFG_DEFAULT_STOP_BOOT_FAILS);
	CU_ASSERT_EQUAL(c.boards[0].stop_on_fail, 0);
	CU_ASSERT_EQUAL(c.target_rate, 0);
	CU_ASSERT_EQUAL(c.min_free, CFG_DEFAULT_MIN_FREE);
	CU_ASSERT_FALSE(json_object_object_get_ex(c.root, "target", NULL));
	CU_ASSERT_FALSE(json_object_object_get_ex(c.root, "results_min_free", NULL));
	CU_ASSERT_FALSE(json_object_object_get_ex(json_object_array_get_idx(
		json_object_object_get(c.root, "boards"), 0), "stop", NULL));
	config_free(&c);

	CU_ASSERT_EQUAL_FATAL(config_parse(J("{'campaign':'t','cycles':3,'target':{'rate':0.001},'results_min_free':'64M',"
		"'defaults':{'stop':{'boot_fails':5}},'boards':[" MIN_BOARD ",{'name':'b2','relay':{'driver':'sim'},"
		"'stop':{'on_fail':'stop','boot_fails':0}}]}"), "s.json", &c, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(c.boards[0].stop_boot_fails, 5);
	CU_ASSERT_EQUAL(c.boards[0].stop_on_fail, 0);
	CU_ASSERT_EQUAL(c.boards[1].stop_boot_fails, 0);
	CU_ASSERT_EQUAL(c.boards[1].stop_on_fail, 1);
	CU_ASSERT_DOUBLE_EQUAL(c.target_rate, 0.001, 1e-12);
	CU_ASSERT_DOUBLE_EQUAL(c.target_confidence, CFG_DEFAULT_TARGET_CONF, 1e-12);
	CU_ASSERT_EQUAL(c.min_free, 64u << 20);
	CU_ASSERT_TRUE(json_object_object_get_ex(c.root, "target", &v));
	CU_ASSERT_DOUBLE_EQUAL(json_object_get_double(json_object_object_get(v, "confidence")), 0.95, 1e-12);
	CU_ASSERT_EQUAL(json_object_get_int64(json_object_object_get(c.root, "results_min_free")), 64 << 20);
	v = json_object_object_get(json_object_array_get_idx(json_object_object_get(c.root, "boards"), 1), "stop");
	CU_ASSERT_STRING_EQUAL(json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN),
			       "{\"boot_fails\":0,\"on_fail\":\"stop\"}");
	config_set_target(&c, 0.01, 0.9);
	CU_ASSERT_DOUBLE_EQUAL(c.target_rate, 0.01, 1e-12);
	CU_ASSERT_TRUE(json_object_object_get_ex(c.root, "target", &v));
	CU_ASSERT_DOUBLE_EQUAL(json_object_get_double(json_object_object_get(v, "rate")), 0.01, 1e-12);
	config_free(&c);
}

/* --target's text. */
static void test_target_text(void)
{
	double r = 0, cf = 0;
	char err[256];

	CU_ASSERT_EQUAL(config_target_parse("0.001", &r, &cf, err, sizeof(err)), 0);
	CU_ASSERT_DOUBLE_EQUAL(r, 0.001, 1e-12);
	CU_ASSERT_DOUBLE_EQUAL(cf, 0.95, 1e-12);
	CU_ASSERT_EQUAL(config_target_parse("0.05,0.9", &r, &cf, err, sizeof(err)), 0);
	CU_ASSERT_DOUBLE_EQUAL(r, 0.05, 1e-12);
	CU_ASSERT_DOUBLE_EQUAL(cf, 0.9, 1e-12);
	CU_ASSERT_EQUAL(config_target_parse("1", &r, &cf, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "target rate 1 is out of range"));
	CU_ASSERT_EQUAL(config_target_parse("0.01,95", &r, &cf, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "target confidence 95 is out of range 0.5..0.9999"));
	CU_ASSERT_EQUAL(config_target_parse("0.1%", &r, &cf, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "'0.1%': expected RATE or RATE,CONFIDENCE"));
	CU_ASSERT_EQUAL(config_target_parse("", &r, &cf, err, sizeof(err)), -EINVAL);
	CU_ASSERT_EQUAL(config_target_parse("0.1,", &r, &cf, err, sizeof(err)), -EINVAL);
	CU_ASSERT_EQUAL(config_target_parse("nan", &r, &cf, err, sizeof(err)), -EINVAL);
}

static void test_load_files(void)
{
	const char *dir = pc_test_tmpdir("config");
	char path[PATH_MAX], err[512];
	struct campaign_cfg c;
	FILE *f;

	snprintf(path, sizeof(path), "%s/missing.json", dir);
	CU_ASSERT_EQUAL(config_load(path, &c, err, sizeof(err)), -ENOENT);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "missing.json: cannot read: No such file or directory"));
	CU_ASSERT_EQUAL(config_load(dir, &c, err, sizeof(err)), -EISDIR);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "cannot read: Is a directory"));

	snprintf(path, sizeof(path), "%s/empty.json", dir);
	f = fopen(path, "w");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fclose(f);
	CU_ASSERT_EQUAL(config_load(path, &c, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "empty.json: empty file"));

	snprintf(path, sizeof(path), "%s/ok.json", dir);
	f = fopen(path, "w");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fputs(J(DOC(MIN_BOARD) "\n"), f);
	fclose(f);
	CU_ASSERT_EQUAL_FATAL(config_load(path, &c, err, sizeof(err)), 0);
	CU_ASSERT_STRING_EQUAL(c.path, path);
	CU_ASSERT_EQUAL(c.nboards, 1);
	config_free(&c);
}

/* key_file: a relative one is relative to the configuration's folder, not the
 * working directory, and campaign.json records the file resolved. */
static void test_key_file_path(void)
{
	static const struct {
		const char *file, *kf, *want;	/* want "CWD/..." : the working directory first */
	} cases[] = {
		{ "/etc/pc/lab.json", "lab/agent.key", "/etc/pc/lab/agent.key" },
		{ "/etc/pc/lab.json", "/keys/a.key", "/keys/a.key" },
		{ "/lab.json", "a.key", "/a.key" },
		{ "lab.json", "a.key", "CWD/a.key" },
		{ "sub/dir/lab.json", "../a.key", "CWD/sub/dir/../a.key" },
	};
	char cwd[PATH_MAX], want[PATH_MAX + 64], doc[256], err[512];
	struct campaign_cfg c;
	json_object *v;

	CU_ASSERT_PTR_NOT_NULL_FATAL(getcwd(cwd, sizeof(cwd)));
	for (size_t i = 0; i < PC_ARRAY_SIZE(cases); i++) {
		snprintf(doc, sizeof(doc), "{\"campaign\":\"t\",\"cycles\":3,\"key_file\":\"%s\",\"boards\":"
			 "[{\"name\":\"b1\",\"relay\":{\"driver\":\"sim\"}}]}", cases[i].kf);
		if (!strncmp(cases[i].want, "CWD/", 4))
			snprintf(want, sizeof(want), "%s/%s", cwd, cases[i].want + 4);
		else
			snprintf(want, sizeof(want), "%s", cases[i].want);
		CU_ASSERT_EQUAL_FATAL(config_parse(doc, cases[i].file, &c, err, sizeof(err)), 0);
		CU_ASSERT_STRING_EQUAL(c.key_file, want);
		CU_ASSERT_TRUE(json_object_object_get_ex(c.root, "key_file", &v) &&
			       !strcmp(json_object_get_string(v), want));
		config_free(&c);
	}
	/* none given: none recorded (the results folder's agent.key) */
	CU_ASSERT_EQUAL_FATAL(config_parse(J(DOC(MIN_BOARD)), "/x/min.json", &c, err, sizeof(err)), 0);
	CU_ASSERT_STRING_EQUAL(c.key_file, "");
	CU_ASSERT_FALSE(json_object_object_get_ex(c.root, "key_file", NULL));
	config_free(&c);
}

static void note_change(const char *path, const char *board, json_object *from, json_object *to, void *arg)
{
	char *out = arg;
	size_t n = strlen(out);

	snprintf(out + n, 512 - n, "%s%s@%s:%s>%s", n ? " " : "", path, board ? board : "-",
		 from ? json_object_to_json_string(from) : "unset", to ? json_object_to_json_string(to) : "unset");
}

/* A resume: operational settings change (each reported), the test's identity does not. */
static void test_resume_diff(void)
{
#define RB(extra) "{'name':'b1','relay':{'driver':'command','on':'a','off':'b'},'device':{'backend':'sim'}" extra "}"
	static const struct {
		const char *cur;	/* against DOC(RB("")) */
		int rc;
		const char *want;	/* the changes, or the refusal's start */
	} cases[] = {
		{ DOC(RB("")), 0, "" },
		{ "{'campaign':'t','cycles':900,'boards':[" RB("") "]}", 0, "" },
		{ DOC(RB(",'boot_timeout_ms':18000,'off_ms':3000")), 0,
		  "boards[0].boot_timeout_ms@b1:10000>18000 boards[0].off_ms@b1:20>3000" },
		{ "{'campaign':'t','cycles':3,'listen':'0.0.0.0:7878','boards':[" RB(",'stop':{'boot_fails':5}") "]}",
		  0, "listen@-:\"127.0.0.1:0\">\"0.0.0.0:7878\" boards[0].stop@b1:unset>{ \"boot_fails\": 5, \"on_fail\": \"continue\" }" },
		{ DOC("{'name':'b1','relay':{'driver':'command','on':'c','off':'b','board_id':'x'},'device':{'backend':'sim'}}"),
		  0, "boards[0].relay.on@b1:\"a\">\"c\" boards[0].relay.board_id@b1:unset>\"x\"" },
		{ DOC(RB(",'link':{'type':'tcp','console':'/dev/null'}")), 0,
		  "boards[0].link.console@b1:unset>\"\\/dev\\/null\" boards[0].link.baud@b1:unset>115200 "
		  "boards[0].link.boot_patterns@b1:unset>[ ]" },
		{ DOC("{'name':'b1','relay':{'driver':'command','on':'a','off':'b'},'device':{'backend':'sim','record_size':8192}}"),
		  -EEXIST, "boards[0].device.record_size: 4096 on record, 8192 in cur.json. That is part of what" },
		{ "{'campaign':'t','cycles':3,'seed':2,'boards':[" RB("") "]}", -EEXIST, "seed: 1 on record, 2 in cur.json" },
		{ DOC(RB(",'modes':['fua']")), -EEXIST, "boards[0].modes: [\"fua\",\"flush\"] on record, [\"fua\"] in" },
		{ DOC("{'name':'b1','relay':{'driver':'sim'},'device':{'backend':'sim'}}"), -EEXIST,
		  "boards[0].relay.driver: \"command\" on record, \"sim\" in" },
		{ DOC(RB("") ",{'name':'b2','relay':{'driver':'sim'}}"), -EEXIST, "boards: 1 on record, 2 in cur.json" },
	};
	struct campaign_cfg a, b;
	char err[2048], got[512];

	CU_ASSERT_EQUAL_FATAL(config_parse(J(DOC(RB(""))), "old.json", &a, err, sizeof(err)), 0);
	for (size_t i = 0; i < PC_ARRAY_SIZE(cases); i++) {
		int rc;

		CU_ASSERT_EQUAL_FATAL(config_parse(J(cases[i].cur), "cur.json", &b, err, sizeof(err)), 0);
		got[0] = err[0] = 0;
		rc = config_resume_diff(a.root, b.root, "cur.json", note_change, got, err, sizeof(err));
		if (rc != cases[i].rc || strncmp(rc ? err : got, cases[i].want, strlen(cases[i].want)) ||
		    (!rc && strlen(got) != strlen(cases[i].want)))
			fprintf(stderr, "\ncase %zu: rc %d, changes '%s', err '%s', want '%s'\n", i, rc, got, err, cases[i].want);
		CU_ASSERT_EQUAL(rc, cases[i].rc);
		CU_ASSERT_EQUAL(strncmp(rc ? err : got, cases[i].want, strlen(cases[i].want)), 0);
		CU_ASSERT(rc || strlen(got) == strlen(cases[i].want));
		if (rc)
			CU_ASSERT_STRING_EQUAL(got, "");	/* a refused resume reports no change */
		config_free(&b);
	}
	config_free(&a);
#undef RB
}

/* Every shipped example loads (the tests run from the top of the tree). */
static void test_shipped_configs(void)
{
	glob_t g;
	struct campaign_cfg c;
	char err[512];
	int have_quick = 0;

	CU_ASSERT_EQUAL_FATAL(glob("configs/*.json", 0, NULL, &g), 0);
	CU_ASSERT_TRUE(g.gl_pathc >= 3);
	for (size_t i = 0; i < g.gl_pathc; i++) {
		int rc = config_load(g.gl_pathv[i], &c, err, sizeof(err));

		if (rc)
			fprintf(stderr, "\n  %s\n", err);
		CU_ASSERT_EQUAL(rc, 0);
		if (rc == 0 && strcmp(c.name, "sim-quick") == 0) {
			have_quick = 1;
			CU_ASSERT_EQUAL(c.nboards, 2);
			CU_ASSERT_STRING_EQUAL(c.boards[0].name, "honest-1");
			CU_ASSERT_STRING_EQUAL(c.boards[1].name, "lying-1");
			CU_ASSERT_EQUAL(c.boards[1].nmodes, 3);	/* fua, flush, none */
		}
		config_free(&c);
	}
	CU_ASSERT_TRUE(have_quick);
	globfree(&g);
}

/* An integer literal past 2^64 - 1 is refused where it stands (json-c would
 * saturate it to 2^64 - 1 without a word); one inside a string is text. */
static void test_big_int(void)
{
	struct campaign_cfg c;
	char err[512];

	CU_ASSERT_EQUAL(config_parse("{\"campaign\":\"x\",\"cycles\":3,\"seed\":18446744073709551616,\"boards\":[]}",
				     "big.json", &c, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "big.json:1:35: JSON syntax error: 18446744073709551616 is past the largest"));
	config_free(&c);
	CU_ASSERT_EQUAL(config_parse("{\"campaign\":\"x\",\"cycles\":3,\"seed\":-99999999999999999999,\"boards\":[]}",
				     "neg.json", &c, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "-99999999999999999999 is past"));
	config_free(&c);
	CU_ASSERT_EQUAL(config_parse("{\"campaign\":\"x\",\"cycles\":3,\"seed\":1.5e99999999999999999999,\"boards\":[]}",
				     "dbl.json", &c, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NULL(strstr(err, "past the largest"));	/* a double: refused as one, elsewhere */
	config_free(&c);
}

/* Numbers from command lines: a digit first, decimal or 0x hex, never octal,
 * never a sign or a space that strtoull would have taken. */
static void test_parse_u64(void)
{
	static const struct { const char *s; int suf; int ok; uint64_t v; } c[] = {
		{ "0", 0, 1, 0 }, { "10", 0, 1, 10 }, { "010", 0, 1, 10 }, { "0x10", 0, 1, 16 }, { "0XfF", 0, 1, 255 },
		{ "18446744073709551615", 0, 1, UINT64_MAX }, { "0xffffffffffffffff", 0, 1, UINT64_MAX },
		{ "4K", 1, 1, 4096 }, { "2MiB", 1, 1, 2u << 20 },
		{ "", 0, 0, 0 }, { " 5", 0, 0, 0 }, { " -1", 0, 0, 0 }, { "-1", 0, 0, 0 }, { "+1", 0, 0, 0 },
		{ "0x", 0, 0, 0 }, { "0x-1", 0, 0, 0 }, { "18446744073709551616", 0, 0, 0 }, { "5 ", 0, 0, 0 },
		{ "4K", 0, 0, 0 }, { "1e3", 0, 0, 0 },
	};
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		uint64_t v = 12345;
		int r = pc_parse_u64(c[i].s, c[i].suf, &v);

		if ((r == 0) != c[i].ok || (c[i].ok && v != c[i].v))
			fprintf(stderr, "pc_parse_u64(\"%s\"): %d, %llu\n", c[i].s, r, (unsigned long long)v);
		CU_ASSERT_EQUAL(r == 0, c[i].ok);
		if (c[i].ok)
			CU_ASSERT_EQUAL(v, c[i].v);
	}
}

static int dev_check(struct campaign_cfg *c, unsigned board, const char *hello, char *why, size_t len)
{
	json_object *h = json_tokener_parse(J(hello));
	int rc;

	CU_ASSERT_PTR_NOT_NULL_FATAL(h);
	why[0] = 0;
	rc = config_device_check(&c->boards[board], h, why, len);
	json_object_put(h);
	return rc;
}

static void test_device_check(void)
{
	struct campaign_cfg c = { 0 };
	char err[512], why[1024];

	CU_ASSERT_EQUAL_FATAL(config_parse(J(DOC("{'name':'s','relay':{'driver':'sim'},'device':{'cid':'FE50AA'}},"
		"{'name':'p','relay':{'driver':'sim'},'device':{'backend':'posix','path':'/dev/disk/by-partlabel/pc',"
		"'serial':'0x1234','part':'an informative string'}},"
		"{'name':'q','relay':{'driver':'sim'},'device':{'backend':'posix','path':'/dev/mmcblk0p3'}}")),
		"dev.json", &c, err, sizeof(err)), 0);
	/* sim: the cid, case aside; a HELLO without one, or another, is refused */
	CU_ASSERT_EQUAL(dev_check(&c, 0, "{'backend':'sim','device':{'cid':'fe50aa'}}", why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(dev_check(&c, 0, "{'backend':'sim','device':{'cid':'fe50ab','path':'m.img'}}", why,
				  sizeof(why)), 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "whose cid is \"fe50ab\" but the configuration says device.cid \"FE50AA\""));
	CU_ASSERT_EQUAL(dev_check(&c, 0, "{'backend':'sim','device':{}}", why, sizeof(why)), 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "names no cid"));
	/* the backend is not compared (a test rig's emulated card on a posix board) */
	CU_ASSERT_EQUAL(dev_check(&c, 0, "{'backend':'posix','device':{'cid':'fe50aa'}}", why, sizeof(why)), 0);
	/* posix: the path as told (PARTLABEL= and by-partlabel are one), the serial */
	CU_ASSERT_EQUAL(dev_check(&c, 1, "{'backend':'posix','device':{'spec':'PARTLABEL=pc','path':'/dev/mmcblk0p3',"
				  "'serial':'0x1234'}}", why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(dev_check(&c, 1, "{'backend':'posix','device':{'spec':'/dev/mmcblk0p3','path':'/dev/mmcblk0p3',"
				  "'serial':'0x1234'}}", why, sizeof(why)), 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "device.path \"/dev/disk/by-partlabel/pc\" but the agent opened /dev/mmcblk0p3"));
	CU_ASSERT_EQUAL(dev_check(&c, 1, "{'backend':'posix','device':{'spec':'PARTLABEL=pc','serial':'0x9'}}", why,
				  sizeof(why)), 1);
	CU_ASSERT_EQUAL(dev_check(&c, 2, "{'backend':'posix','device':{'spec':'PARTLABEL=x','path':'/dev/mmcblk0p3'}}",
				  why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(dev_check(&c, 2, "{'backend':'posix','device':{'spec':'PARTLABEL=x'},'region':{'path':"
				  "'/dev/mmcblk0p3'}}", why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(dev_check(&c, 2, "{'backend':'posix','device':{'spec':'PARTLABEL=x','path':'/dev/mmcblk1p3'}}",
				  why, sizeof(why)), 1);
	config_free(&c);
	/* the expected identity is a non-empty string */
	CU_ASSERT_EQUAL(config_parse(J(DOC("{'name':'s','relay':{'driver':'sim'},'device':{'cid':''}}")), "dev.json", &c,
				     err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "boards[0].device.cid: expected the string the board's HELLO must say"));
	config_free(&c);
}

/* Real boards left at values that suit only the sim: warned, table-driven. */
static void test_real_board_warnings(void)
{
	static const struct {
		const char *what, *doc;
		unsigned n;		/* warnings */
		const char *has[4];	/* substrings of the warnings, in order */
	} cases[] = {
		{ "sim boards: nothing", DOC(MIN_BOARD), 0, { NULL } },
		{ "qemu with a posix disk is a VM: nothing",
		  DOC("{'name':'v','relay':{'driver':'qemu','kernel':'k','initrd':'i','drive':'d','console':'c'},"
		      "'device':{'backend':'posix'}}"), 0, { NULL } },
		{ "hidrelay + posix at every default: all four",
		  DOC("{'name':'b1','relay':{'driver':'hidrelay','device':'/dev/hidraw0'},'device':{'backend':'posix'}}"),
		  4, { "w.json: boards[0].off_ms: 20 ms suits only the sim: board b1 is real",
		       "w.json: boards[0].boot_timeout_ms: the default 10000 ms is a guess for the sim",
		       "w.json: listen: 127.0.0.1:0 suits only the sim: the agent of a real board (b1)",
		       "w.json: listen: port 0 picks a new port each run" } },
		{ "gpiod, measured values and a reachable fixed listen: nothing",
		  "{'campaign':'t','cycles':3,'listen':'0.0.0.0:7878','boards':[{'name':'g','relay':{'driver':'gpiod',"
		  "'chip':'gpiochip0','line':1},'off_ms':3000,'boot_timeout_ms':45000}]}", 0, { NULL } },
		{ "lcus, boot_timeout given but equal to the default: only off_ms",
		  "{'campaign':'t','cycles':3,'listen':'10.0.0.2:7878','boards':[{'name':'l','relay':{'driver':'lcus',"
		  "'device':'/dev/ttyUSB0'},'off_ms':499,'boot_timeout_ms':10000}]}",
		  1, { "boards[0].off_ms: 499 ms suits only the sim" } },
		{ "pdudaemon on a serial link: no listen warning",
		  "{'campaign':'t','cycles':3,'boards':[{'name':'p','relay':{'driver':'pdudaemon','hostname':'pdu1',"
		  "'port':3},'link':{'type':'serial','device':'/dev/ttyUSB1'},'off_ms':2000,'boot_timeout_ms':30000}]}",
		  0, { NULL } },
		{ "one real board among sim boards: named by index",
		  "{'campaign':'t','cycles':3,'listen':'[::1]:7000','boards':[{'name':'s','relay':{'driver':'sim'}},"
		  "{'name':'r','relay':{'driver':'command','on':'x','off':'y'},'device':{'backend':'posix'},"
		  "'off_ms':1000}]}",
		  3, { "boards[1].relay: a command relay without board_id is locked for this campaign only",
		       "boards[1].boot_timeout_ms: the default", "listen: [::1]:7000 suits only the sim: the agent of a real board (r)" } },
		{ "a command relay naming its board_id: no relay warning",
		  "{'campaign':'t','cycles':3,'listen':'0.0.0.0:7878','boards':[{'name':'r','relay':{'driver':'command',"
		  "'on':'x','off':'y','board_id':'rpi-3'},'device':{'backend':'posix'},'off_ms':1000,'boot_timeout_ms':30000}]}",
		  0, { NULL } },
	};

	for (size_t i = 0; i < PC_ARRAY_SIZE(cases); i++) {
		struct campaign_cfg c;
		char err[512], buf[4096];
		const char *at;
		unsigned n;
		int rc = config_parse(J(cases[i].doc), "w.json", &c, err, sizeof(err));

		if (rc)
			printf("\n  %s: %s", cases[i].what, err);
		CU_ASSERT_EQUAL_FATAL(rc, 0);
		n = config_warnings(&c, buf, sizeof(buf));
		if (n != cases[i].n)
			printf("\n  %s: %u warnings, wanted %u:\n%s", cases[i].what, n, cases[i].n, buf);
		CU_ASSERT_EQUAL(n, cases[i].n);
		at = buf;
		for (size_t k = 0; k < 4 && cases[i].has[k]; k++) {
			const char *f = strstr(at, cases[i].has[k]);

			if (!f)
				printf("\n  %s: no '%s' in:\n%s", cases[i].what, cases[i].has[k], buf);
			CU_ASSERT_PTR_NOT_NULL(f);
			if (f)
				at = f;
		}
		config_free(&c);
	}
}

int suite_config(void)
{
	CU_pSuite s = CU_add_suite("config", NULL, NULL);

	/* the qemu driver joins relay.c's list as powercut's main() adds it */
	if (!s || vboard_register() < 0 ||
	    !CU_add_test(s, "minimal document, all defaults", test_minimal) ||
	    !CU_add_test(s, "every key set", test_full_values) ||
	    !CU_add_test(s, "incomplete_infra_share", test_infra_share) ||
	    !CU_add_test(s, "cut plans at a flush and at a FUA write", test_cut_io_plans) ||
	    !CU_add_test(s, "defaults merge into boards", test_defaults) ||
	    !CU_add_test(s, "resolved document reloads", test_roundtrip) ||
	    !CU_add_test(s, "bad documents: exact messages", test_bad) ||
	    !CU_add_test(s, "stop rules, target, results_min_free", test_stop_rules) ||
	    !CU_add_test(s, "--target RATE[,CONFIDENCE]", test_target_text) ||
	    !CU_add_test(s, "files: missing, directory, empty, ok", test_load_files) ||
	    !CU_add_test(s, "key_file relative to the configuration's folder", test_key_file_path) ||
	    !CU_add_test(s, "resume: what may change, what may not", test_resume_diff) ||
	    !CU_add_test(s, "configs/*.json load", test_shipped_configs) ||
	    !CU_add_test(s, "numbers from command lines (pc_parse_u64)", test_parse_u64) ||
	    !CU_add_test(s, "integers past 2^64 - 1 in a configuration", test_big_int) ||
	    !CU_add_test(s, "the device a HELLO names against device.*", test_device_check) ||
	    !CU_add_test(s, "real boards at sim-only values: warnings", test_real_board_warnings))
		return -1;
	return 0;
}
