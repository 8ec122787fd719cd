/*
 * cmd_usage.c - the agent's --help: the commands (powercut-agent --help) and
 * each command's own usage and options (powercut-agent COMMAND --help).
 */
#include <stdio.h>
#include <string.h>

#include "agent/cmd.h"

static const char usage_text[] =
	"usage: powercut-agent COMMAND [OPTIONS]\n"
	"\n"
	"Commands (powercut-agent COMMAND --help: its usage and options):\n"
	"  prepare   claim a region: write its superblocks and fill every slot (destroys its contents)\n"
	"  run       connect to the host, say HELLO, scan and write as the host asks\n"
	"  scan      verify the region offline and print the findings as JSON lines\n"
	"  info      print device identity and region geometry as JSON\n"
	"  write     write records in one mode as fast as the device takes them, and print the rate\n"
	"            (a benchmark of the durability modes; the region is overwritten, not verified)\n"
	"\n"
	"Every command takes --device DEV (a file, a block device, PARTLABEL=x, PARTUUID=x,\n"
	"LABEL=x, UUID=x, or sim:PATH for the emulated eMMC) and the device options its\n"
	"--help lists. Sizes take K, M, G suffixes (binary). Exit status: 0 ok, 1 failure,\n"
	"2 usage error.\n";

/* the options of the device, the region and the sim, which every command takes */
static const char device_text[] =
	"\n"
	"Device options:\n"
	"  --device DEV            a file, a block device, PARTLABEL=x, PARTUUID=x, LABEL=x, UUID=x,\n"
	"                          or sim:PATH for the emulated eMMC (required)\n"
	"  --offset BYTES          region start on the device (default 0)\n"
	"  --length BYTES          region length (default: to the end of the device)\n"
	"  --allow-whole-disk      permit a whole disk rather than a partition\n"
	"  --sim-profile P         sim fault profile (honest, lying-flush, ...; see docs/sim.md)\n"
	"  --sim-program-us N      sim: microseconds to program one sector (default 20)\n"
	"  --sim-cache-sectors N   sim: volatile cache size in sectors (default 256)\n"
	"  --sim-seed N, --sim-rate R   sim: randomness for fault profiles\n"
	"  --sim-cut-after N       sim: cut the power (SIGKILL the board) after N sectors programmed\n"
	"  --sim-cut-at OP:N[:US]  sim: cut the power at the start of the Nth cache flush (OP flush) or\n"
	"                          inside the Nth FUA write (OP fua) of this boot, US microseconds of\n"
	"                          program time into it (default 0)\n"
	"  --sim-keep-inputs N     sim: keep each power-on's base image, write log and image at the\n"
	"                          cut, of the last N power-ons, in MEDIA.inputs/ (default 0: none)\n"
	"  -v, --verbose           debug messages (what the host asks, scan statistics) on stderr\n"
	"  -h, --help              this text\n"
	"\n"
	"Sizes take K, M, G suffixes (binary). Exit status: 0 ok, 1 failure, 2 usage error.\n";

static const struct {
	const char *cmd, *text;
} cmd_text[] = {
	{ "prepare",
	  "usage: powercut-agent prepare --device DEV --yes [--record-size BYTES] [--seed N] [--size BYTES]\n"
	  "                              [--force --confirm-device DEV]\n"
	  "\n"
	  "Claims a region: writes its two superblocks and fills every slot with a\n"
	  "generation-0 record. Everything in the region is destroyed.\n"
	  "\n"
	  "  --yes                   required: confirms the region is destroyed\n"
	  "  --record-size BYTES     a multiple of 512 up to 1M (default 4096)\n"
	  "  --seed N                the region's seed (default 1)\n"
	  "  --size BYTES            sim media: its size, created when missing (default 4M)\n"
	  "  --force --confirm-device DEV   overwrite a filesystem, RAID member, swap area or\n"
	  "                          partition table libblkid finds there (DEV: the device path\n"
	  "                          again, as resolved)\n" },
	{ "run",
	  "usage: powercut-agent run --device DEV --board NAME --key FILE --connect HOST:PORT\n"
	  "       powercut-agent run --device DEV --board NAME --key FILE --console TTY [--baud N]\n"
	  "\n"
	  "Reaches the host, proves it holds the campaign key, says HELLO, then scans and\n"
	  "writes as the host asks, until the power goes.\n"
	  "\n"
	  "  --connect HOST:PORT     the host's listen address (a tcp link)\n"
	  "  --console TTY           talk over the board's serial console instead (a serial link)\n"
	  "  --baud N                the console's rate (default 115200)\n"
	  "  --board NAME            the board's name in the campaign (required)\n"
	  "  --key FILE              the campaign's key (made by powercut run; default $PC_KEY_FILE)\n"
	  "  --boot-delay-ms N       wait N ms before starting\n"
	  "  --connect-timeout-ms N  how long to keep trying to reach the host and authenticate\n"
	  "                          (default 30000)\n"
	  "  --fresh-boot-id         a random boot id for this process instead of the kernel's\n"
	  "                          (a board simulated by a process, whose power cut is a kill)\n"
	  "  --sysrq PATH            obey the host's crash requests by writing 'b' to PATH\n"
	  "                          (/proc/sysrq-trigger on a board: reboot without syncing;\n"
	  "                          refused without it)\n" },
	{ "scan",
	  "usage: powercut-agent scan --device DEV [--pattern sequential|random]\n"
	  "\n"
	  "Verifies the region offline and prints the findings as JSON lines (protocol\n"
	  "messages); a summary goes to stderr.\n"
	  "\n"
	  "  --pattern P             sequential or random: the position order of the runs\n"
	  "                          (default sequential)\n" },
	{ "info",
	  "usage: powercut-agent info --device DEV\n"
	  "\n"
	  "Prints the device's identity (CID, EXT_CSD, model, queue) and the region's\n"
	  "geometry as one JSON document, read-only.\n" },
	{ "write",
	  "usage: powercut-agent write --device DEV --mode MODE --yes [--records N] [--qd N]\n"
	  "                            [--flush-every N] [--pattern sequential|random]\n"
	  "\n"
	  "Writes records in one mode as fast as the device takes them and prints one\n"
	  "JSON line: the rate, and io_audit, what reached the device (docs/io-audit.md).\n"
	  "A benchmark of the durability modes: the region's records are overwritten,\n"
	  "not verified.\n"
	  "\n"
	  "  --mode MODE             fua, fua+flush, flush, journal, none, relwr or relwr-off\n"
	  "  --yes                   required: it overwrites the region's records\n"
	  "  --records N             how many (default: every slot once)\n"
	  "  --qd N                  queue depth, 1 to 32 (default 1)\n"
	  "  --flush-every N         records per flush in flush and journal (default 8)\n"
	  "  --pattern P             sequential or random slot order (default sequential)\n" },
};

int agent_cmd_known(const char *cmd)
{
	for (size_t i = 0; i < sizeof(cmd_text) / sizeof(cmd_text[0]); i++)
		if (!strcmp(cmd, cmd_text[i].cmd))
			return 1;
	return 0;
}

void agent_usage(FILE *f, const char *cmd)
{
	for (size_t i = 0; cmd && i < sizeof(cmd_text) / sizeof(cmd_text[0]); i++)
		if (!strcmp(cmd, cmd_text[i].cmd)) {
			fputs(cmd_text[i].text, f);
			fputs(device_text, f);
			return;
		}
	fputs(usage_text, f);
}
