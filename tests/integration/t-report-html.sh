#!/bin/bash
# The HTML report (issue 10): `powercut report --format html -o FILE` on a
# short sim campaign (an honest board and a lying one) is one self-contained
# page -- every chart well-formed SVG, the page balanced, no script, no
# external resource, the board and device names of hostile results as text --
# and it renders: headless Chromium draws it to a PNG of the window's size
# with plenty of ink, the PASS green and the FAIL red among its colours.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

command -v python3 > /dev/null || skip "python3 not installed (tools/debian-packages.txt lists it)"
T=$(cd "$T" && pwd)	# Chromium wants an absolute file:// URL

sim_quick_caught > "$T/sq.json"
"$PC" run "$T/sq.json" --results "$T/r" --cycles 30 --agent "$AGENT" --quiet --no-report \
	> "$T/run.out" 2>&1; rc=$?
check "a campaign with the lying board exits 1 (was $rc)" [ $rc -eq 1 ]
"$PC" report --format html -o "$T/r.html" "$T/r" > "$T/rep.out" 2>&1; rc=$?
check "report --format html exits 1 too: a device FAILed (was $rc)" [ $rc -eq 1 ]
check "...writing the page to the file, nothing on stdout ($(wc -c < "$T/r.html") bytes)" \
	[ -s "$T/r.html" -a ! -s "$T/rep.out" ]

# The page's structure, and what it says. Prints one line per problem.
cat > "$T/check.py" <<'PY'
import html.parser, re, sys
import xml.etree.ElementTree as ET

doc = open(sys.argv[1], encoding="utf-8").read()
want_svgs = int(sys.argv[2])
bad = []
svgs = re.findall(r"<svg\b.*?</svg>", doc, re.S)
if len(svgs) < want_svgs:
    bad.append("%d <svg> charts, wanted at least %d" % (len(svgs), want_svgs))
if doc.count("<svg") != len(svgs):
    bad.append("an <svg> without its </svg>")
for i, s in enumerate(svgs):
    try:
        root = ET.fromstring(s)
        if root.tag != "svg" or root.find("title") is None:
            bad.append("svg %d: no <svg> root with a <title>" % i)
    except ET.ParseError as e:
        bad.append("svg %d does not parse: %s" % (i, e))

VOID = {"meta", "br", "link", "img", "hr", "input", "col", "area", "base", "source", "wbr"}
class Balance(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack, self.tags = [], set()
    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        for k, v in attrs:
            if k == "href" and not (v or "").startswith("#"):
                bad.append("a link out of the page: %s" % v)
            if k == "src" or k.startswith("on"):
                bad.append("<%s %s=...>" % (tag, k))
        if tag not in VOID:
            self.stack.append(tag)
    def handle_startendtag(self, tag, attrs):
        self.tags.add(tag)
    def handle_endtag(self, tag):
        if not self.stack or self.stack[-1] != tag:
            bad.append("</%s> closes <%s>" % (tag, self.stack[-1] if self.stack else "nothing"))
        else:
            self.stack.pop()
p = Balance()
p.feed(doc)
p.close()
if p.stack:
    bad.append("never closed: %s" % " ".join(p.stack))
for t in ("script", "iframe", "object", "embed", "link", "img", "foreignobject", "image", "use"):
    if t in p.tags:
        bad.append("a <%s> element" % t)
low = doc.lower()
for s in ("<script", "javascript:", "http:", "https:", "url(", "@import", "@font-face"):
    if s in low:
        bad.append("%r in the page" % s)
if not doc.startswith("<!DOCTYPE html>"):
    bad.append("no <!DOCTYPE html>")
for s in sys.argv[3:]:
    if s not in doc:
        bad.append("missing: %s" % s)
print("\n".join(bad))
PY
# two devices, each: the strip of verdicts, latency per mode, records/s (and the lying one's tears)
problems=$(python3 "$T/check.py" "$T/r.html" 6 '<span class="badge FAIL">FAIL</span>' \
	'<span class="badge PASS">PASS</span>' 'Verdicts over cycles, per board' 'Write latency per mode' \
	'Records per second, per mode' 'lying-1' 'honest-1' 'First FAIL cycles' 2>&1)
check "every <svg> parses, the page is balanced, self-contained, and says FAIL and PASS${problems:+: $problems}" \
	[ -z "$problems" ]

# The facts in words (issue 37): what reached the device per mode, as the
# text report's io line says it; the part's name; the cut plan and the policy
# as rows, not JSON; a glossary holding docs/design.md section 6's meanings.
"$PC" report "$T/r" > "$T/r.txt" 2>&1
cat > "$T/facts.py" <<'PY'
import html, re, sys

doc = open(sys.argv[1], encoding="utf-8").read()
text = open(sys.argv[2], encoding="utf-8").read()
design = open(sys.argv[3], encoding="utf-8").read()
bad = []
def want(s, why):
    if s not in doc:
        bad.append("%s: %r missing" % (why, s))
# every io line of the text report, as a row of the HTML's table
ios = re.findall(r"^  io: (\S+) -> (.*?) \(\d+ writes", re.sub(r"\n {6}", " ", text), re.M)
if not ios:
    bad.append("the text report has no io line")
want("<h4>What reached the device</h4>", "the io table")
for mode, became in ios:
    want("<tr><td>%s</td><td>%s</td>" % (html.escape(mode, False), html.escape(became, False)), "the io line of " + mode)
want("<tr><th>part name</th><td>PCSIM</td></tr>", "the part name")
want("after a random number of acknowledged records, 16 to 120", "the cut plan in words")
want("<th>torn_sector unacknowledged</th>", "the policy's columns")
want("<tr><td>fua</td><td>allowed</td><td><b>violation</b></td>", "the policy's fua row")
want("<tr><th>modes</th><td>fua, flush, none</td></tr>", "the modes as a list")
for raw in ('{&quot;at&quot;', '{"at"', '&quot;torn_sector&quot;', '["fua"', '[&quot;fua'):
    if raw in doc:
        bad.append("raw JSON in the page: %s" % raw)
# the glossary: each class of design.md section 6 with its meaning, word for word
want('<section class="glossary" id="glossary">', "the glossary")
sec6 = design.split("## 6.")[1].split("\n## ")[0]
rows = re.findall(r"^\| `(\w+)` \| (.*?) \| (.*?) \|$", sec6, re.M)
if len(rows) < 10:
    bad.append("design.md section 6 has %d class rows" % len(rows))
for cls, meaning, viol in rows:
    want("<tr><td><code>%s</code></td><td>%s</td><td>%s</td></tr>" % (cls, html.escape(meaning, False), html.escape(viol, False)),
         "the glossary's " + cls)
for name in ("unclassified", "write_refused", "PASS", "FAIL", "BOOT_FAIL", "INFRA_ERROR", "INCOMPLETE"):
    want("<tr><td><code>%s</code></td>" % name, "the glossary's " + name)
print("\n".join(bad))
PY
problems=$(python3 "$T/facts.py" "$T/r.html" "$T/r.txt" docs/design.md 2>&1)
check "the page has the io line per mode, the part name, the cut plan and policy as rows, the glossary${problems:+: $problems}" \
	[ -z "$problems" ]

# A posix device (a file through the command relay): its part name and the
# region's size, which the configuration does not give, come from its agent.
head -c 4194304 /dev/zero > "$T/disk.img"
"$AGENT" prepare --device "$T/disk.img" --record-size 4096 --yes > /dev/null 2>&1
write_get "$T/get.sh"
cat > "$T/px.json" <<JSON
{ "campaign": "px", "cycles": 4, "listen": "127.0.0.1:0",
  "boards": [ { "name": "px1", "device": { "backend": "posix", "record_size": 4096, "path": "$T/disk.img" },
    "relay": { "driver": "command",
      "on": "setsid $PWD/$AGENT run --fresh-boot-id --device $T/disk.img --connect \$PC_CONNECT --board px1 >> $T/px1.log 2>&1 & echo \$! > $T/px1.pid",
      "off": "p=\$(cat $T/px1.pid 2>/dev/null) && kill -KILL -\$p 2>/dev/null; true",
      "get": "sh $T/get.sh $T/px1.pid" },
    "modes": ["fua", "flush"], "records_per_cycle": 1000, "cut": { "at": "mix", "window_ms": [1, 20] },
    "boot_timeout_ms": 8000, "off_ms": 5 } ] }
JSON
"$PC" run "$T/px.json" --results "$T/px" --quiet --no-report > "$T/px.out" 2>&1; rc=$?
check "a posix campaign on a file runs (exit 0, or 3 INCONCLUSIVE: a late relay; was $rc)" passed_or_late $rc "$T/px"
prc=$rc
"$PC" report --format html -o "$T/px.html" "$T/px" > /dev/null 2>&1; rc=$?
check "...and its HTML report is made (exit $prc as the run's; was $rc)" [ $rc -eq $prc ]
problems=$(python3 "$T/check.py" "$T/px.html" 2 "<tr><th>part name</th><td>file $T/disk.img</td></tr>" \
	'<tr><th>region size</th><td>4194304 bytes <span class="muted">(4 MiB)</span>' \
	"the device's size as its agent reported it" "<h2>Part file $T/disk.img</h2>" 2>&1)
check "...naming its part (a file) and its region's size from the agent${problems:+: $problems}" [ -z "$problems" ]

# the cut plan mix (docs/config.md, Cut plans) in words, as a campaign.json gives it
cp -r "$T/px" "$T/pxm"
jq -c '.config.boards[0].cut = {"at": "mix", "window_ms": [5, 60], "delay_us": 0}' "$T/px/campaign.json" > "$T/pxm/campaign.json"
"$PC" report --format html -o "$T/pxm.html" "$T/pxm" > /dev/null 2>&1
problems=$(python3 "$T/check.py" "$T/pxm.html" 2 '<tr><th>plan</th><td>mix</td></tr>' \
	'at a FUA write (fua, fua+flush, journal), and at a random instant 5 to 60 ms after the work is sent' 2>&1)
check "...and a cut plan mix in words${problems:+: $problems}" [ -z "$problems" ]
check "...not as JSON" [ "$(grep -c '{&quot;at' "$T/pxm.html")" -eq 0 ]

# Results are hostile input: a board and a device named as markup stay text.
cp -r "$T/r" "$T/rh"
for f in verdicts.jsonl events.jsonl campaign.json; do
	sed -i 's#lying-1#<script>alert(1)</script>#g; s#PCSIM#<img src=x onerror=alert(2)>#g' "$T/rh/$f"
done
"$PC" report --format html -o "$T/rh.html" "$T/rh" > /dev/null 2>&1; rc=$?
check "report of hostile names exits 1 (was $rc)" [ $rc -eq 1 ]
problems=$(python3 "$T/check.py" "$T/rh.html" 6 '&lt;script&gt;alert(1)&lt;/script&gt;' \
	'&lt;img src=x onerror=alert(2)&gt;' 2>&1)
check "...the names escaped, no markup of theirs on the page${problems:+: $problems}" [ -z "$problems" ]

# ---- render it ----
# Debian 12's chromium: --headless renders without a display; as root it
# needs --no-sandbox; its D-Bus complaints on stderr are harmless. A profile
# of its own in $T keeps it off the user's.
png_stats() { # file: "W H NONWHITE DISTINCT PASS FAIL", counting pixels
	python3 - "$1" <<'PY'
import struct, sys, zlib
from collections import Counter

data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
pos, idat, ihdr = 8, [], None
while pos < len(data):
    n, = struct.unpack(">I", data[pos:pos + 4])
    typ, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + n]
    pos += 12 + n
    if typ == b"IHDR":
        ihdr = struct.unpack(">IIBBBBB", body)
    elif typ == b"IDAT":
        idat.append(body)
    elif typ == b"IEND":
        break
w, h, depth, ctype, _, _, interlace = ihdr
assert depth == 8 and ctype in (2, 6) and not interlace, "unexpected PNG type %r" % (ihdr,)
bpp = 3 if ctype == 2 else 4
stride = w * bpp
raw = zlib.decompress(b"".join(idat))
# undo the scanline filters; "up" bytewise without carries, on big integers
L7 = int.from_bytes(b"\x7f" * stride, "big")
H8 = int.from_bytes(b"\x80" * stride, "big")
prev, colours = bytes(stride), Counter()
for y in range(h):
    f = raw[y * (stride + 1)]
    line = raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)]
    if f == 0:
        cur = line
    elif f == 2:
        a, b = int.from_bytes(line, "big"), int.from_bytes(prev, "big")
        cur = (((a & L7) + (b & L7)) ^ ((a ^ b) & H8)).to_bytes(stride, "big")
    else:
        cur = bytearray(line)
        if f == 1:
            for i in range(bpp, stride):
                cur[i] = (cur[i] + cur[i - bpp]) & 255
        elif f == 3:
            for i in range(stride):
                cur[i] = (cur[i] + (((cur[i - bpp] if i >= bpp else 0) + prev[i]) >> 1)) & 255
        elif f == 4:
            for i in range(stride):
                a = cur[i - bpp] if i >= bpp else 0
                b, c = prev[i], (prev[i - bpp] if i >= bpp else 0)
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                cur[i] = (cur[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        else:
            raise SystemExit("bad filter %d" % f)
        cur = bytes(cur)
    prev = cur
    colours.update(cur[i:i + 3] for i in range(0, stride, bpp))
white = colours[b"\xff\xff\xff"]
print(w, h, w * h - white, len(colours), colours[bytes.fromhex("2ca02c")], colours[bytes.fromhex("d62728")])
PY
}

if ! command -v chromium > /dev/null; then
	skip_part "chromium is not installed (tools/debian-packages.txt lists it): the page was not rendered"
else
	timeout 180 chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run \
		--user-data-dir="$T/chromium" --screenshot="$T/r.png" --window-size=1200,3000 \
		"file://$T/r.html" > "$T/chromium.log" 2>&1; rc=$?
	if [ $rc -ne 0 ] || [ ! -s "$T/r.png" ]; then
		skip_part "chromium did not render the page (exit $rc): $(grep -v -e dbus -e 'unexpected operator' \
			"$T/chromium.log" | tail -2 | tr '\n' ' ')"
	else
		read -r w h ink ncol green red < <(png_stats "$T/r.png" 2>&1)
		echo "  (PNG ${w}x${h}: $ink non-white pixels, $ncol colours, $green PASS green, $red FAIL red)"
		check "the screenshot is 1200x3000 (was ${w}x${h})" [ "${w}x${h}" = 1200x3000 ]
		# the page: tables, badges and charts over most of the window
		check "...not blank: over 5% of it inked (was $ink pixels)" [ "${ink:-0}" -gt 180000 ]
		check "...many colours, not one flat fill (was $ncol)" [ "${ncol:-0}" -ge 20 ]
		check "...the PASS green drawn (was $green pixels)" [ "${green:-0}" -ge 500 ]
		check "...and the FAIL red (was $red pixels)" [ "${red:-0}" -ge 500 ]
	fi
fi
finish
