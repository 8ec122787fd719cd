#!/bin/bash
# The committed fixture images are exactly what tests/tools/mkfixtures.c writes.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
check "mkfixtures runs" "$TOOLS/mkfixtures" "$T/fx"
check "tests/fixtures matches the generator byte for byte" diff -r tests/fixtures "$T/fx"
finish
