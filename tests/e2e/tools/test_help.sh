#!/usr/bin/env bash
# Help for humans (issue 45 item 7), from the real binary: `mtrain launch --help` leads with a
# usage line naming PROGRAM, examples and the most used flags before the long sections;
# `config show --help` lists its own flags, not every setting's; every man page has EXAMPLES and
# EXIT STATUS and renders within 80 columns; a swapped-letter typo suggests the right strategy.
. "$(dirname "$0")/../lib.sh"

"$MTRAIN" launch --help >"$WORK/launch" 2>&1
head -12 "$WORK/launch" >"$WORK/launch.head"
expect_in "$WORK/launch.head" "[--] [PROGRAM [ARGS...]]"
expect_in "$WORK/launch.head" "Examples:"
most=$(grep -n "^Most used:" "$WORK/launch" | cut -d: -f1)
trainer=$(grep -n "^Bundled trainer" "$WORK/launch" | cut -d: -f1)
multi=$(grep -n "^Multi-node" "$WORK/launch" | cut -d: -f1)
if [ -n "$most" ] && [ -n "$trainer" ] && [ -n "$multi" ] && [ "$most" -lt 30 ] && [ "$most" -lt "$trainer" ] && [ "$trainer" -lt "$multi" ]; then
  ok "launch --help: Most used (line $most), then the trainer (line $trainer), multi-node (line $multi)"
else
  fail "launch --help sections: Most used '$most', trainer '$trainer', multi-node '$multi'"; sed -n 1,40p "$WORK/launch" | sed 's/^/    | /'
fi
sed -n "$most,\$p" "$WORK/launch" | sed '/^$/q' >"$WORK/most"
for f in --nproc-per-node --strategy --model --config --resume; do expect_in "$WORK/most" "$f"; done

"$MTRAIN" config show --help >"$WORK/show" 2>&1
expect_in "$WORK/show" "--sources"
expect_not_in "$WORK/show" "  --partition"
n=$(wc -l <"$WORK/show")
[ "$n" -lt 40 ] && ok "config show --help is $n lines" || fail "config show --help is $n lines"

"$MTRAIN" launch --strategy fdsp --dry-run >"$WORK/typo" 2>&1
expect_in "$WORK/typo" "did you mean 'fsdp'"

command -v man >/dev/null || skip "man is not installed (apt-get install man-db groff-base)"
"$MTRAIN" __man "$WORK/man" || { fail "mtrain __man"; finish; }
pages=0
for p in "$WORK"/man/*.1; do
  pages=$((pages + 1))
  name=$(basename "$p")
  grep -q '^\.SH EXAMPLES' "$p" && grep -q '^\.SH EXIT STATUS' "$p" || fail "$name lacks EXAMPLES or EXIT STATUS"
  LC_ALL=C MANWIDTH=80 MANPAGER=cat man -l "$p" 2>"$WORK/man.err" >"$WORK/man.out"
  [ -s "$WORK/man.out" ] || fail "$name renders to nothing: $(head -3 "$WORK/man.err")"
  wide=$(awk 'length > 80' "$WORK/man.out")
  [ -z "$wide" ] || { fail "$name has lines over 80 columns:"; echo "$wide" | head -5 | sed 's/^/    | /'; }
done
[ "$pages" -gt 10 ] && ok "$pages man pages checked (EXAMPLES, EXIT STATUS, 80 columns)" || fail "only $pages man pages"
finish
