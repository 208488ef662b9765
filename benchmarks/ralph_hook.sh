#!/usr/bin/env bash
# The baseline `make bench` holds the stop hook against: a loop stop hook of the "Ralph"
# kind, in bash with jq, as people write them. It reads the transcript path from the
# payload, finds the transcript's last assistant line, reads that line's text, ends the
# loop on its completion promise or its iteration limit, bumps the iteration counter in
# its state file and answers with a block that sends the loop's prompt again.
#
# The state file (RALPH_STATE) is Markdown: frontmatter with `iteration:`,
# `max_iterations:` (0: no limit) and `completion_promise:`, then the prompt.
set -euo pipefail

payload=$(cat)
state=${RALPH_STATE:-.claude/ralph-loop.local.md}
[ -f "$state" ] || exit 0

transcript=$(jq -r '.transcript_path // empty' <<<"$payload")
{ [ -n "$transcript" ] && [ -f "$transcript" ]; } || exit 0
last=$(grep '"role":"assistant"' "$transcript" | tail -n 1) || exit 0
text=$(jq -r '[.message.content[]? | select(.type == "text") | .text] | join("\n")' <<<"$last")

iteration=$(sed -n 's/^iteration: *//p' "$state")
limit=$(sed -n 's/^max_iterations: *//p' "$state")
promise=$(sed -n 's/^completion_promise: *//p' "$state")
if [ -n "$promise" ] && [[ $text == *"<promise>$promise</promise>"* ]]; then
    rm -f "$state"
    exit 0
fi
if [ "${limit:-0}" -gt 0 ] && [ "$iteration" -ge "$limit" ]; then
    rm -f "$state"
    exit 0
fi

next=$((iteration + 1))
sed "s/^iteration: .*/iteration: $next/" "$state" >"$state.tmp.$$"
mv "$state.tmp.$$" "$state"
prompt=$(awk 'seen >= 2 { print } /^---$/ { seen++ }' "$state")
jq -n --arg reason "$prompt" --arg note "loop iteration $next" \
    '{decision: "block", reason: $reason, systemMessage: $note}'
