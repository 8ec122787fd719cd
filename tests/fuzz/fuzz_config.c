/*
 * fuzz_config.c - the campaign configuration loader (harness/campaign/config.c).
 *
 * The input is a configuration file's text, handed to config_parse() as
 * config_load() hands it a file it read (NUL-terminated; a file with a NUL
 * byte is refused before parsing). A document is either refused with a
 * message or accepted, and then every value the campaign relies on is within
 * the bounds docs/config.md gives; config_free() releases all of it.
 */
#include <errno.h>
#include <string.h>

#include "common/util.h"
#include "harness/campaign/config.h"
#include "tests/fuzz/fuzz.h"
#include "vboard/vboard.h"

#define FUZZ_MAX_INPUT (64u << 10)

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	pc_log_init("fuzz-config", PC_LOG_ERR);
	/* the qemu driver joins relay.c's list as powercut's main() adds it */
	FUZZ_CHECK(vboard_register() == 0, "cannot add the qemu relay driver");
	return 0;
}

static void check_board(const struct board_cfg *b, unsigned i)
{
	FUZZ_CHECK(b->name[0] && memchr(b->name, 0, sizeof(b->name)), "board %u has no name", i);
	FUZZ_CHECK(b->relay_driver[0], "board %s: no relay driver", b->name);
	FUZZ_CHECK(b->record_size >= PC_SECTOR && b->record_size % PC_SECTOR == 0 &&
		   b->record_size <= PC_MAX_RECORD_SIZE, "board %s: record_size %u", b->name, b->record_size);
	FUZZ_CHECK(b->pattern == PC_PAT_SEQUENTIAL || b->pattern == PC_PAT_RANDOM, "board %s: pattern %d",
		   b->name, b->pattern);
	FUZZ_CHECK(b->nmodes >= 1 && b->nmodes <= CFG_MAX_MODES, "board %s: %u modes", b->name, b->nmodes);
	for (unsigned m = 0; m < b->nmodes; m++)
		FUZZ_CHECK(b->modes[m] > PC_MODE_GEN0 && b->modes[m] < PC_MODE_MAX, "board %s: mode %d", b->name,
			   b->modes[m]);
	FUZZ_CHECK(b->queue_depth >= 1 && b->queue_depth <= 32, "board %s: queue_depth %u", b->name,
		   b->queue_depth);
	FUZZ_CHECK(b->records_per_cycle >= 1, "board %s: no records per cycle", b->name);
	FUZZ_CHECK(b->flush_every >= 1, "board %s: flush_every 0", b->name);
	FUZZ_CHECK(b->cut_min <= b->cut_max, "board %s: cut [%u, %u]", b->name, b->cut_min, b->cut_max);
	FUZZ_CHECK(b->full_every >= 1, "board %s: verify.full_every 0", b->name);
	FUZZ_CHECK(b->nboot_patterns <= PC_ARRAY_SIZE(b->boot_patterns), "board %s: %u boot patterns", b->name,
		   b->nboot_patterns);
	for (unsigned k = 0; k < b->nboot_patterns; k++)
		FUZZ_CHECK(memchr(b->boot_patterns[k], 0, sizeof(b->boot_patterns[k])), "board %s: boot pattern %u",
			   b->name, k);
	FUZZ_CHECK(b->relay && b->device, "board %s: no relay or device section", b->name);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct campaign_cfg c;
	char err[1024];
	char *text;
	int ret;

	if (size > FUZZ_MAX_INPUT)
		return -1;
	text = malloc(size + 1);
	FUZZ_CHECK(text != NULL, "out of memory");
	memcpy(text, data, size);
	text[size] = 0;
	if (strlen(text) != size) {	/* config_load refuses it: "contains a NUL byte" */
		free(text);
		return -1;
	}
	err[0] = 0;
	ret = config_parse(text, "fuzz.json", &c, err, sizeof(err));
	if (ret == 0) {
		FUZZ_CHECK(c.root && c.name[0], "accepted without a root or name");
		FUZZ_CHECK(c.nboards >= 1 && c.boards, "accepted with no boards");
		FUZZ_CHECK(c.cycles >= 1, "accepted with %u cycles", c.cycles);
		for (unsigned i = 0; i < c.nboards; i++) {
			check_board(&c.boards[i], i);
			for (unsigned j = 0; j < i; j++)
				FUZZ_CHECK(strcmp(c.boards[i].name, c.boards[j].name), "two boards named %s",
					   c.boards[i].name);
		}
		/* the resolved document is what campaign.json records */
		FUZZ_CHECK(json_object_to_json_string(c.root) != NULL, "the resolved document does not serialise");
	} else {
		FUZZ_CHECK(ret < 0, "config_parse returned %d", ret);
		FUZZ_CHECK(err[0], "refused without a message");
		FUZZ_CHECK(c.root == NULL && c.boards == NULL, "a refused config kept memory");
	}
	config_free(&c);
	free(text);
	return 0;
}
