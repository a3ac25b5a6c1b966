#!/usr/bin/env bash
# scripts/check-format (issue 41 item 7): in a scratch repository holding the real .clang-format and
# script, a change that leaves a line as clang-format would not write it fails with the diff and the
# command that fixes it; that command fixes it; lines nobody changed since the base are not judged;
# a shallow clone (CI's checkout) fetches the base from its origin.
. "$(dirname "$0")/../lib.sh"
src=${MTRAIN_SOURCE_DIR:?}
command -v git-clang-format > /dev/null && command -v clang-format > /dev/null || skip "clang-format is not installed"
repo=$WORK/repo
mkdir -p "$repo/lib/x" "$repo/scripts"
cp "$src/.clang-format" "$repo/"
cp "$src/scripts/check-format" "$repo/scripts/"
cd "$repo"
git init -q . && git config user.email t@example.invalid && git config user.name t
# An old line far from the style: never touched, never judged.
printf 'int   old_line( int a ){return a;}\n' > lib/x/a.cpp
git add -A && git commit -qm base
git rev-parse HEAD > .clang-format-base
scripts/check-format > out.txt 2>&1 && ok "nothing changed: passes" || fail "nothing changed: $(cat out.txt)"

printf 'int   old_line( int a ){return a;}\nint new_line(int b)  {  return b+1;  }\n' > lib/x/a.cpp
if scripts/check-format > out.txt 2>&1; then fail "a badly formatted new line passed"; else
  rc=$?
  [ "$rc" -eq 1 ] && ok "a badly formatted new line: exit 1" || fail "exit $rc, not 1"
  grep -q "new_line" out.txt && grep -q "git clang-format --force" out.txt && ok "the diff and the fix are printed" \
    || fail "no diff/fix in: $(cat out.txt)"
  grep -q "^-int   old_line" out.txt && fail "the untouched old line was judged" || ok "the untouched old line is not judged"
fi
fix=$(grep -o "git clang-format --force [0-9a-f]* -- lib apps tests" out.txt)
$fix > /dev/null 2>&1
grep -q "^int new_line(int b) { return b + 1; }$" lib/x/a.cpp && ok "the printed command formats the new line" \
  || fail "after the fix: $(cat lib/x/a.cpp)"
grep -q "^int   old_line( int a ){return a;}$" lib/x/a.cpp && ok "and leaves the old line alone" || fail "the old line changed"
scripts/check-format > out.txt 2>&1 && ok "formatted: passes" || fail "still failing: $(cat out.txt)"
scripts/check-format 0123456789abcdef0123456789abcdef01234567 > out.txt 2>&1 && grep -q "skipped" out.txt \
  && ok "a base missing from the clone is said and skipped" || fail "missing base: $(cat out.txt)"
# CI's checkout may be shallow, without the base commit: the script fetches it from origin and judges.
git add lib .clang-format-base scripts && git commit -qm change
git clone -q --depth 1 "file://$repo" "$WORK/shallow" && cd "$WORK/shallow"
git rev-parse --quiet --verify "$(cat .clang-format-base)^{commit}" > /dev/null && fail "the shallow clone has the base"
printf 'int   bad_line( int c ){return c;}\n' >> lib/x/a.cpp
if scripts/check-format > out.txt 2>&1; then fail "a shallow clone passed a bad line: $(cat out.txt)"; else
  grep -q "bad_line" out.txt && ok "a shallow clone fetches the base and judges the change" || fail "shallow: $(cat out.txt)"
fi
finish
