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

"$PC" run configs/sim-quick.json --results "$T/r" --cycles 30 --agent "$AGENT" --quiet --no-report \
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
