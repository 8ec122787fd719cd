#!/usr/bin/python3
"""vcache-check: the verdicts of a virtual board with a volatile cache against
what the cache really lost.

    vcache-check RESULTS BOARD PART_START_SECTOR SECTORS_PER_RECORD NSLOTS

The qemu relay's rebuild (vboard/vcache.c) appends one line per power-on to
RESULTS/boards/BOARD/vcache.jsonl: each write it did not keep whole, as
[sector, sectors] (lost) or [sector, sectors, mask] (torn: '1' kept, '0'
lost). The k-th power-on of the board is the k-th power_on event in
events.jsonl, and the verdict of that power-on's cycle judges what the
rebuild left. For every such cycle this prints, and checks:

  expected: the records the agent saw acknowledged (ACK lines of the cycle)
            whose slot's write the rebuild lost or tore, sector by sector;
  found:    the seqs of the verdict's violation findings (lost_acked, torn,
            torn_sector);

and that the verdict is FAIL exactly when expected is not empty. Sequential
pattern only (slot = (seq - 1) mod NSLOTS, checked against every finding).
Exit 0 when every cycle agrees, 1 otherwise. Prints one summary line last:
cycles, cycles with an acknowledged record lost, unacknowledged writes lost
or torn, cycles cut mid-write.
"""
import json
import sys


def ranges(msgs):
    out = set()
    for m in msgs:
        out.update(range(m["first"], m["first"] + m["n"]))
    return out


def main():
    if len(sys.argv) != 6:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    res, board = sys.argv[1], sys.argv[2]
    start, spr, nslots = (int(x) for x in sys.argv[3:6])
    base = start + 8  # the region's records begin after its 8-sector header

    power_ons = []  # cycle of the k-th power-on
    acked, submitted = {}, {}
    with open(f"{res}/events.jsonl") as f:
        for line in f:
            e = json.loads(line)
            if e.get("board") != board:
                continue
            if e.get("ev") == "power_on":
                power_ons.append(e["cycle"])
            elif e.get("ev") == "rx":
                m = e["msg"]
                if m.get("type") == "ack":
                    acked.setdefault(e["cycle"], []).append(m)
                elif m.get("type") == "submit":
                    submitted.setdefault(e["cycle"], []).append(m)
    verdicts = {}
    with open(f"{res}/verdicts.jsonl") as f:
        for line in f:
            v = json.loads(line)
            if v.get("board") == board:
                verdicts[v["cycle"]] = v
    records = []
    with open(f"{res}/boards/{board}/vcache.jsonl") as f:
        for line in f:
            records.append(json.loads(line))

    def slot_of(sector):
        rel = sector - base
        return rel // spr if 0 <= rel < nslots * spr else None

    bad = n = n_acked_lost = unacked_lost = midwrite = 0
    for rec in records:
        k = rec["power_on"]
        if k > len(power_ons):
            print(f"power-on {k}: no power_on event for it")
            bad += 1
            continue
        cycle = power_ons[k - 1]
        v = verdicts.get(cycle)
        if v is None or rec["writes"] == 0:
            continue  # a boot that wrote nothing (the last verification)
        n += 1
        lost_slots = set()
        for w in rec["lost"]:
            lost_slots.update(s for s in (slot_of(w[0] + i) for i in range(w[1])) if s is not None)
        for w in rec["tears"]:
            mask = w[2]
            lost_slots.update(s for s in (slot_of(w[0] + i) for i in range(w[1]) if mask[i % len(mask)] == "0")
                              if s is not None)
        ack = ranges(acked.get(cycle, []))
        sub = ranges(submitted.get(cycle, []))
        expected = sorted(s for s in ack if (s - 1) % nslots in lost_slots)
        unacked_lost += sum(1 for s in sub - ack if (s - 1) % nslots in lost_slots)
        found = []
        for fd in v.get("findings", []):
            if fd.get("seq") and fd.get("slot") is not None and (fd["seq"] - 1) % nslots != fd["slot"]:
                print(f"cycle {cycle}: finding seq {fd['seq']} at slot {fd['slot']}: not the sequential pattern")
                bad += 1
            if fd.get("violation") and fd.get("class") in ("lost_acked", "torn", "torn_sector"):
                found.append(fd["seq"])
        found.sort()
        planned = v.get("records", {}).get("planned", 0)
        if v.get("records", {}).get("submitted", 0) < planned:
            midwrite += 1
        ok = found == expected and (v["verdict"] == "FAIL") == bool(expected)
        n_acked_lost += bool(expected)
        print(f"cycle {cycle} (power-on {k}) {v['mode_run']:<9} {v['verdict']:<5} "
              f"writes {rec['writes']} flushes {rec['flushes']} fua {rec['fua_writes']} "
              f"lost {rec['dropped']} torn {rec['torn']}; acked lost: {len(expected)}, violations: {len(found)}"
              + ("" if ok else f"  MISMATCH expected {expected[:20]} found {found[:20]}"))
        bad += not ok
    print(f"vcache-check {board}: {n} cycles, {n_acked_lost} with an acknowledged record lost, "
          f"{unacked_lost} unacknowledged records lost or torn, {midwrite} cut mid-write, {bad} mismatches")
    return 1 if bad or n == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
