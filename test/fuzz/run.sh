#!/usr/bin/env bash
# Fuzz the key encoding with libFuzzer (clang, with AddressSanitizer and
# UndefinedBehaviorSanitizer).  test/fuzz/run.sh [SECONDS]  (default 20)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
seconds=${1:-20}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
clang -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	-I"$here/../../src/core" -o "$out/fuzz_keys" "$here/fuzz_keys.c" "$here/../../src/core/keys.c"
mkdir -p "$out/corpus"
# seeds: a plain key, escapes, a 4-byte UTF-8 character, a decoder input
printf 'order-42' >"$out/corpus/plain"
printf 'a/b%%2F.' >"$out/corpus/escapes"
printf '\xf0\x9f\x94\x92' >"$out/corpus/utf8"
printf 'ta%%2Fb' >"$out/corpus/name"
# libFuzzer exits non-zero on a failing input, which it saves beside this script
status=0
"$out/fuzz_keys" -max_total_time="$seconds" -max_len=600 -print_final_stats=1 \
	-artifact_prefix="$here/" "$out/corpus" >"$out/log" 2>&1 || status=$?
grep -E '^(stat::number_of_executed_units|SUMMARY)|ERROR' "$out/log" || true
if [ "$status" != 0 ]; then
	tail -n 40 "$out/log" >&2
	echo "fuzzing found a failing input (saved in $here)" >&2
	exit 1
fi
echo "fuzz: key encoding held for ${seconds} s"
