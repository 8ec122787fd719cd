/*
 * mkfixtures.c - write the crafted region images of tests/fixtures/.
 *
 *   mkfixtures DIR
 *
 * Each case is a 64 KiB region of 2 KiB records (28 slots of 4 sectors) in a
 * known state: cycle 1 wrote seqs 1..8 (slots 0..7) and they all landed;
 * cycle 2 wrote seqs 9..14 (slots 8..13) and the power was cut. The image is
 * what a scan at the next boot finds; case.json says what cycle 2 was, which
 * seqs the host saw acknowledged, and the findings the verifier must report.
 * The output is deterministic: the committed fixtures are this program's.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/record.h"

#define REGION (64u << 10)
#define RS 2048u
#define SPR (RS / 512u)

static struct pc_geom G;
static uint8_t img[REGION];

static uint8_t *sector(uint32_t slot, uint32_t i)
{
	return img + (pc_slot_lba(&G, slot) + i) * 512;
}

static void put_record(uint32_t slot, uint64_t seq, uint32_t cycle, uint16_t flags)
{
	pc_record_build(sector(slot, 0), &G, slot, seq, cycle, flags);
}

static void base(uint16_t mode2)
{
	memset(img, 0, sizeof(img));
	pc_sb_encode(&G, 0, img);
	pc_sb_encode(&G, 1, img + pc_sb_lba(&G, 1) * 512);
	for (uint32_t s = 0; s < G.nslots; s++)
		put_record(s, 0, 0, 0);
	for (uint64_t seq = 1; seq <= 8; seq++)
		put_record((uint32_t)(seq - 1), seq, 1, PC_MODE_FLUSH);
	(void)mode2;
}

/* cycle 2's records that landed whole */
static void landed(uint64_t from, uint64_t to, uint16_t mode)
{
	for (uint64_t seq = from; seq <= to; seq++)
		put_record((uint32_t)(seq - 1), seq, 2, mode);
}

static void sector_of(uint8_t out[512], uint32_t slot, uint32_t i, uint64_t seq, uint32_t cycle, uint16_t flags)
{
	uint8_t rec[RS];

	pc_record_build(rec, &G, slot, seq, cycle, flags);
	memcpy(out, rec + i * 512, 512);
}

static int write_case(const char *dir, const char *name, const char *mode, const char *acked,
		      const char *expect)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%s/region.img", dir, name);
	f = fopen(path, "wb");
	if (!f || fwrite(img, 1, sizeof(img), f) != sizeof(img) || fclose(f)) {
		perror(path);
		return -1;
	}
	snprintf(path, sizeof(path), "%s/%s/case.json", dir, name);
	f = fopen(path, "w");
	if (!f) {
		perror(path);
		return -1;
	}
	fprintf(f, "{\n  \"class\": \"%s\",\n"
		"  \"history\": [ { \"cycle\": 1, \"first\": 1, \"n\": 8, \"mode\": \"flush\", \"acked\": [[1, 8]] } ],\n"
		"  \"judge\": { \"cycle\": 2, \"first\": 9, \"n\": 6, \"mode\": \"%s\", \"acked\": %s },\n"
		"  \"expect\": %s\n}\n", name, mode, acked, expect);
	return fclose(f);
}

int main(int argc, char **argv)
{
	char err[128];
	const char *dir = argc > 1 ? argv[1] : "tests/fixtures";
	uint16_t FL = PC_MODE_FLUSH, FU = PC_MODE_FUA;
	unsigned tear = 137;
	uint8_t nw[512], od[512];
	int rc = 0;

	mkdir(dir, 0755);
	if (pc_geom_init(&G, REGION, RS, 99, err, sizeof(err))) {
		fprintf(stderr, "%s\n", err);
		return 2;
	}
	pc_uuid_parse("5eed0000-1111-4222-8333-444455556666", G.uuid);
	G.created = 1767225600;

	base(FL);
	landed(9, 14, FL);
	rc |= write_case(dir, "intact", "flush", "[[9, 4]]",
			 "{ \"verdict\": \"PASS\", \"counts\": { \"intact\": 6 }, \"findings\": [] }");

	base(FL);
	landed(9, 11, FL);
	rc |= write_case(dir, "not_written", "flush", "[[9, 3]]",
			 "{ \"verdict\": \"PASS\", \"counts\": { \"intact\": 3, \"not_written\": 3 },"
			 " \"findings\": [ { \"class\": \"not_written\", \"seq\": 12, \"n\": 3, \"slot\": 11, \"violation\": false } ] }");

	base(FL);
	landed(9, 12, FL);
	rc |= write_case(dir, "lost_acked", "flush", "[[9, 6]]",
			 "{ \"verdict\": \"FAIL\", \"counts\": { \"intact\": 4, \"lost_acked\": 2 },"
			 " \"findings\": [ { \"class\": \"lost_acked\", \"seq\": 13, \"slot\": 12, \"violation\": true },"
			 " { \"class\": \"lost_acked\", \"seq\": 14, \"slot\": 13, \"violation\": true } ] }");

	/* seq 12 (slot 11): sectors 0 and 1 new, 2 and 3 still the gen-0 record */
	base(FL);
	landed(9, 11, FL);
	sector_of(sector(11, 0), 11, 0, 12, 2, FL);
	sector_of(sector(11, 1), 11, 1, 12, 2, FL);
	rc |= write_case(dir, "torn", "flush", "[[9, 4]]",
			 "{ \"verdict\": \"FAIL\", \"counts\": { \"intact\": 3, \"torn\": 1, \"not_written\": 2 },"
			 " \"findings\": [ { \"class\": \"torn\", \"seq\": 12, \"slot\": 11, \"boundary\": 2, \"acked\": true,"
			 " \"violation\": true } ] }");

	/* seq 11 (slot 10), a FUA write: sector 2 holds new bytes up to byte 137, old after */
	base(FU);
	landed(9, 10, FU);
	sector_of(sector(10, 0), 10, 0, 11, 2, FU);
	sector_of(sector(10, 1), 10, 1, 11, 2, FU);
	sector_of(nw, 10, 2, 11, 2, FU);
	sector_of(od, 10, 2, 0, 0, 0);
	/* a tear is located to the byte only where new and old differ at the seam */
	while (nw[tear - 1] == od[tear - 1] || nw[tear] == od[tear])
		tear++;
	memcpy(sector(10, 2), nw, tear);
	memcpy(sector(10, 2) + tear, od + tear, 512 - tear);
	{
		char expect[512];
		snprintf(expect, sizeof(expect),
			 "{ \"verdict\": \"FAIL\", \"counts\": { \"intact\": 2, \"torn_sector\": 1, \"not_written\": 3 },"
			 " \"findings\": [ { \"class\": \"torn_sector\", \"seq\": 11, \"slot\": 10, \"sector\": 2,"
			 " \"offset\": %u, \"order\": \"new-old\", \"acked\": false, \"violation\": true } ] }", tear);
		rc |= write_case(dir, "torn_sector", "fua", "[[9, 2]]", expect);
	}

	/* seq 10 (slot 9): five bits flipped in sector 1 */
	base(FL);
	landed(9, 14, FL);
	sector(9, 1)[10] ^= 0x01;
	sector(9, 1)[99] ^= 0x30;
	sector(9, 1)[300] ^= 0x80;
	sector(9, 1)[301] ^= 0x04;
	rc |= write_case(dir, "corrupt", "flush", "[[9, 6]]",
			 "{ \"verdict\": \"FAIL\", \"counts\": { \"intact\": 5, \"corrupt\": 1 },"
			 " \"findings\": [ { \"class\": \"corrupt\", \"seq\": 10, \"slot\": 9, \"sector\": 1, \"bits\": 5,"
			 " \"nearest\": \"new\", \"violation\": true } ] }");

	/* seq 12's first sector landed in cold slot 20 instead of slot 11 */
	base(FL);
	landed(9, 11, FL);
	sector_of(sector(20, 0), 11, 0, 12, 2, FL);
	{
		char expect[512];
		snprintf(expect, sizeof(expect),
			 "{ \"verdict\": \"FAIL\", \"counts\": { \"intact\": 3, \"not_written\": 3, \"misdirected\": 1 },"
			 " \"findings\": [ { \"class\": \"misdirected\", \"slot\": 20, \"sector\": 0, \"found_lba\": %llu,"
			 " \"belongs_lba\": %llu, \"found_seq\": 12, \"violation\": true } ] }",
			 (unsigned long long)pc_slot_lba(&G, 20), (unsigned long long)pc_slot_lba(&G, 11));
		rc |= write_case(dir, "misdirected", "flush", "[[9, 3]]", expect);
	}

	/* cold slot 3 went back to its gen-0 record: seq 4 vanished */
	base(FL);
	landed(9, 14, FL);
	put_record(3, 0, 0, 0);
	rc |= write_case(dir, "stale", "flush", "[[9, 6]]",
			 "{ \"verdict\": \"FAIL\", \"counts\": { \"intact\": 6, \"stale\": 1 },"
			 " \"findings\": [ { \"class\": \"stale\", \"seq\": 4, \"slot\": 3, \"found_seq\": 0,"
			 " \"previous_seq\": 4, \"violation\": true } ] }");

	/* cold slot 5 (seq 6, written by cycle 1): garbage in sector 3 */
	base(FL);
	landed(9, 14, FL);
	memset(sector(5, 3) + 200, 0xa5, 16);
	rc |= write_case(dir, "collateral", "flush", "[[9, 6]]",
			 "{ \"verdict\": \"FAIL\", \"counts\": { \"intact\": 6, \"collateral\": 1 },"
			 " \"findings\": [ { \"class\": \"collateral\", \"seq\": 6, \"slot\": 5, \"sector\": 3,"
			 " \"last_written_cycle\": 1, \"violation\": true } ] }");
	return rc ? 1 : 0;
}
