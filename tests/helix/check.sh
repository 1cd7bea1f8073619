#!/usr/bin/env bash
# Drives a real Helix through Tandem's Helix scenarios, in tmux, and says which passed:
# a code action's edit lands unsaved and `u` undoes it, a `tandem:` comment runs and goes, a
# completion shows while typing and is accepted, a question typed on the command line (the
# README's key binding) starts a turn, the transcript's path shows, and a call Helix cannot be
# asked about is named in the last message.
#
#   tests/helix/check.sh path/to/hx [path/to/tandem]
#
# The model is Tandem's replay provider, so nothing leaves the machine. Helix runs with a home,
# configuration and workspace of its own under a temporary folder, which is removed at the end
# unless KEEP=1. CI cannot run this (Helix is not on crates.io); docs/editors.md says how to
# build Helix for it.
set -euo pipefail

HX=${1:?usage: tests/helix/check.sh path/to/hx [path/to/tandem]}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
TANDEM=${2:-$ROOT/target/debug/tandem}
command -v tmux >/dev/null || { echo "tmux is needed" >&2; exit 2; }
[ -x "$TANDEM" ] || { echo "no tandem binary at $TANDEM (cargo build -p tandem)" >&2; exit 2; }
absolute() { echo "$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"; }
HX=$(absolute "$HX")
TANDEM=$(absolute "$TANDEM")
RUNTIME=${HELIX_RUNTIME:-$(dirname "$HX")/../../runtime}

DIR=$(mktemp -d)
SESSION=tandem-helix-check-$$
cleanup() {
  tmux kill-session -t "$SESSION" 2>/dev/null || true
  if [ "${KEEP:-0}" = 1 ]; then echo "kept $DIR"; else rm -rf "$DIR"; fi
}
trap cleanup EXIT

mkdir -p "$DIR/ws" "$DIR/config/helix" "$DIR/home"
git -C "$DIR/ws" init -q
printf 'def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n' > "$DIR/ws/calc.py"

# One line per model request, in the order the scenarios below make them.
cat > "$DIR/agent.jsonl" <<'EOF'
{"toolCalls": [{"name": "read_file", "arguments": {"path": "calc.py"}}]}
{"toolCalls": [{"name": "edit", "arguments": {"path": "calc.py", "old_string": "def add(a, b):\n", "new_string": "def add(a, b):\n    \"\"\"Return the sum of a and b.\"\"\"\n"}}]}
{"text": "Documented add.\n\nThings to watch: nothing."}
{"toolCalls": [{"name": "read_file", "arguments": {"path": "calc.py"}}]}
{"toolCalls": [{"name": "edit", "arguments": {"path": "calc.py", "old_string": "def sub(a, b):", "new_string": "def subtract(a, b):"}}]}
{"text": "Renamed sub to subtract."}
{"text": "It adds its two arguments."}
{"toolCalls": [{"name": "shell", "arguments": {"command": "python3 -m unittest"}}]}
{"text": "I could not run the tests.\nThey need your approval."}
EOF
for _ in 1 2 3 4 5 6; do echo '{"text": "turn a * b"}'; done > "$DIR/completion.jsonl"

cat > "$DIR/config/helix/languages.toml" <<EOF
[language-server.tandem]
command = "$TANDEM"
args = ["lsp"]
config = { settings = { approval = { mode = "auto_edit" }, model = "agent", models = { agent = { provider = "replay", script = "$DIR/agent.jsonl" }, coder = { provider = "replay", script = "$DIR/completion.jsonl" } }, completion = { model = "coder" } } }

[[language]]
name = "python"
language-servers = ["tandem"]
EOF
cat > "$DIR/config/helix/config.toml" <<'EOF'
[keys.normal.space]
"A" = '@:lsp-workspace-command tandem.ask {"path": "%{buffer_name}", "lines": [%{selection_line_start}, %{selection_line_end}]} "'
EOF

tmux new-session -d -s "$SESSION" -x 160 -y 30 -c "$DIR/ws" \
  "env HOME=$DIR/home XDG_CONFIG_HOME=$DIR/config HELIX_RUNTIME=$RUNTIME '$HX' -v --log $DIR/hx.log calc.py; sleep 600"

screen() { tmux capture-pane -p -t "$SESSION"; }
keys() { tmux send-keys -t "$SESSION" "$@"; }
type_text() { tmux send-keys -t "$SESSION" -l "$1"; }
# A key right after Escape would reach Helix as Alt and that key: let the escape stand alone.
escape() { keys Escape; sleep 0.5; }
failed=0
# Waits up to 30 s until the screen shows $3 (`shows`: a fixed string; `matches`: an extended
# regular expression) or no longer shows it (`hides`: a fixed string); reports the step $2.
expect_screen_to() {
  local how=$1 step=$2 pattern=$3 found
  for _ in $(seq 150); do
    case $how in
      matches) screen | grep -qE -- "$pattern" && found=1 || found=0 ;;
      *) screen | grep -qF -- "$pattern" && found=1 || found=0 ;;
    esac
    if { [ "$how" = hides ] && [ "$found" = 0 ]; } || { [ "$how" != hides ] && [ "$found" = 1 ]; }; then
      echo "ok   $step"; return 0
    fi
    sleep 0.2
  done
  echo "FAIL $step: the screen never $how: $pattern"; screen | sed 's/^/     | /'; failed=1
}
expect_screen() { expect_screen_to shows "$@"; }
# Opens the code action menu on line $1 and picks the item whose title starts with $2. The
# menu takes no typed filter: the item is reached with Down from the first.
code_action() {
  type_text ":$1"; keys Enter
  keys Space; keys a
  expect_screen "the code action menu on line $1" "Explain this"
  local titles index
  titles=$(screen | grep -oE "(Run Tandem instruction|Fix this diagnostic|Ask Tandem|Write tests for this|Document this|Explain this)")
  index=$(printf '%s\n' "$titles" | grep -nF -- "$2" | head -1 | cut -d: -f1)
  for _ in $(seq $((index - 1))); do keys Down; done
  keys Enter
}

expect_screen "Helix starts with Tandem" "calc.py"
code_action 1 "Document this"
expect_screen "the docstring lands in the buffer" '"""Return the sum of a and b."""'
expect_screen "the answer shows on one line" "Tandem: Documented add. Things to watch: nothing."
expect_screen "the buffer is modified, not saved" "[+]"
keys u
expect_screen_to hides "u undoes the agent's edit" "Return the sum"

type_text ":5"; keys Enter; keys O; type_text "# tandem: rename to subtract"; escape
code_action 6 "Run Tandem instruction"
expect_screen "the instruction's edit lands" "def subtract(a, b):"
expect_screen_to hides "the tandem: comment is removed" "# tandem:"

type_text ":6"; keys Enter; keys A; keys Enter; type_text "re"
expect_screen "a completion shows while typing" "return a * b"
keys Tab; keys Enter; escape
expect_screen_to matches "the completion is accepted" "^ +7 +return a \\* b *$"

type_text ":1"; keys Enter; keys Space; keys A
expect_screen "the key binding pre-fills the question" 'tandem.ask {"path"'
type_text 'What does add do?"'; keys Enter
expect_screen "a question from the command line is answered" "Tandem: It adds its two arguments."

type_text ":lsp-workspace-command tandem.showTranscript"; keys Enter
expect_screen "the transcript's path shows" "Tandem's transcript: "

code_action 1 "Write tests for this"
expect_screen "the call Helix cannot ask about is named" "Not run, as this editor cannot show approval prompts: Run \`python3 -m unittest\`"

if [ "$failed" = 0 ]; then echo "all Helix scenarios passed ($("$HX" --version))"; fi
exit "$failed"
