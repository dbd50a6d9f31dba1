#!/bin/sh
# engram's hooks without starting Node, for every agent:
#   sh hook.sh <event>                                         (Claude Code's plugin)
#   sh hook.sh --node <node> hook <event> --agent <agent>      (the agents engram installs into)
# The queueing hooks (Stop, PreCompact, SessionEnd) only hand an event to the background worker, and
# a Node start alone costs more than Claude Code's budget when several sessions end at once on a small
# machine. So this writes the event raw, one file in <ENGRAM_HOME>/spool/incoming/ (a JSON header
# line: event, the agent when it is not Claude Code, physical cwd, the environment the Node hook's
# decisions read; then the hook's stdin as sent), starts the adopter (`engram.mjs hook adopt-events`)
# unless one runs, and exits 0 printing nothing. The adopter turns each file into the spool line the Node hook would have written, by the
# same code (src/surfaces/claude-code/hook-incoming.ts), so the agent's protocol, settings, the
# session's project folder and the transcript checks are applied there.
# The answering hooks (SessionStart, the per-prompt one) ask the resident hook server
# (`engram.mjs hook serve`, hook-server.ts) on its unix socket <ENGRAM_HOME>/run/hooks.sock with
# curl, the same raw event (its header also naming the agent), and print its reply: the bytes the
# Node hook would print, by the same code. No socket, no curl, no answer within 2 s or any error:
# the Node hook answers (ENGRAM_HOOK_ASKED says why; it logs that and starts a server for next time).
# Whatever this cannot do the Node hook does, fed the same stdin: Windows paths, a relative
# ENGRAM_HOME, odd characters, too many events waiting, and any write that fails (a full disk, an
# unwritable spool: the Node hook spends the reserve and says what was lost). Only shell builtins on
# the usual path, plus cat, one mv and the adopter's start (or one curl).

node=node
if [ "${1:-}" = --node ]; then
  node=${2:-node}
  shift 2
fi
[ "${1:-}" = hook ] && shift
event=${1:-}
agent=
[ "${2:-}" = --agent ] && agent=${3:-}
here=${0%/*}
taken=no
input=
asked=

# The Node hook, with what this already read of stdin; it exits 0 and prints valid JSON or nothing.
slow() {
  if [ -n "$agent" ]; then
    set -- hook "$event" --agent "$agent"
  else
    set -- hook "$event" --from engram-plugin
  fi
  if [ "$taken" = yes ]; then
    printf '%s\n' "$input" | ENGRAM_HOOK_ASKED=$asked "$node" "$here/engram.mjs" "$@"
  else
    ENGRAM_HOOK_ASKED=$asked "$node" "$here/engram.mjs" "$@"
  fi
  exit 0
}

mode=queue
case $event in
  stop) name=Stop ;;
  pre-compact) name=PreCompact ;;
  session-end) name=SessionEnd ;;
  session-start | user-prompt-submit) mode=ask ;;
  *) slow ;;
esac
# An agent's name goes into the event's header as it is: only engram's own words (the Node hook
# takes anything else).
case $agent in *[!a-z-]*) slow ;; esac
# A call engram itself started (kernel/nested-call.ts: set and neither empty nor 0): nothing to do.
case ${ENGRAM_NESTED:-0} in 0) ;; *) exit 0 ;; esac
# Windows (Git Bash) paths are not the ones Node reads.
[ "${OS:-}" = Windows_NT ] && slow
home=${ENGRAM_HOME:-}
if [ -z "$home" ]; then
  [ -n "${HOME:-}" ] || slow
  home=$HOME/.engram
fi
case $home in /*) ;; *) slow ;; esac

umask 077
if [ "$mode" = ask ]; then
  socket=$home/run/hooks.sock
  command -v curl >/dev/null 2>&1 || slow
  asked=none
  [ -S "$socket" ] || slow
  asked=
else
  incoming=$home/spool/incoming
  if [ ! -d "$incoming" ]; then mkdir -p "$incoming" 2>/dev/null || slow; fi
  set -- "$incoming"/ev-*.json
  [ $# -le 1000 ] || slow
fi

input=$(cat) || slow
taken=yes
[ ${#input} -le 1048576 ] || slow

# $1 as a JSON string's inside, in $escaped; false for control characters (the Node hook takes those).
escape() {
  case $1 in *[[:cntrl:]]*) return 1 ;; esac
  rest=$1
  escaped=
  while :; do
    case $rest in
      *[\\\"]*)
        before=${rest%%[\\\"]*}
        rest=${rest#"$before"}
        after=${rest#?}
        escaped="$escaped$before\\${rest%"$after"}"
        rest=$after
        ;;
      *)
        escaped=$escaped$rest
        return 0
        ;;
    esac
  done
}

# One variable, when set, into $recorded as a JSON member.
record() {
  eval "isset=\${$1+x} value=\${$1-}"
  [ -n "$isset" ] || return 0
  escape "$value" || slow
  recorded="$recorded${recorded:+,}\"$1\":\"$escaped\""
}

# RECORDED_ENV in hook-recorded-env.ts: engram's home, Claude Code's project folder, every setting's
# variable but the secrets, each agent's project folder and Copilot's home (a test keeps the two
# lists equal).
recorded=
for variable in HOME ENGRAM_HOME CLAUDE_PROJECT_DIR ENGRAM_STORE ENGRAM_BUSY_TIMEOUT_MS ENGRAM_STORE_POOL_SIZE \
  ENGRAM_STORE_STATEMENT_TIMEOUT_MS ENGRAM_PROJECT ENGRAM_TOP_K ENGRAM_MIN_SCORE ENGRAM_RECALL_TIME_CAP_MS \
  ENGRAM_MODEL_CONTEXT_WINDOWS ENGRAM_NOTES_TEMPLATE ENGRAM_NOTES_PROMPT ENGRAM_MANAGED_INSTRUCTIONS ENGRAM_HOST \
  ENGRAM_PORT ENGRAM_STOP_GRACE_MS ENGRAM_EMBEDDING_PROVIDER ENGRAM_EMBEDDING_BASE_URL ENGRAM_EMBEDDING_MODEL \
  ENGRAM_EMBEDDING_DIMENSIONS ENGRAM_EMBEDDING_BATCH_SIZE ENGRAM_EMBEDDING_TIMEOUT_MS ENGRAM_EMBEDDING_MAX_RETRIES \
  ENGRAM_MODEL_PROVIDER ENGRAM_MODEL ENGRAM_SIDE_MODEL ENGRAM_MODEL_BASE_URL ANTHROPIC_BASE_URL OPENAI_BASE_URL \
  ENGRAM_MODEL_TIMEOUT_MS ENGRAM_MODEL_MAX_RETRIES ENGRAM_CLAUDE_CODE_COMMAND CLAUDECODE \
  ENGRAM_WRAPPER_RECALL_TIME_CAP_MS ENGRAM_SYNC_REMOTE ENGRAM_SYNC_PROJECT_REMOTE ENGRAM_SYNC_BRANCH \
  ENGRAM_SYNC_PROJECTS_TO_PERSONAL ENGRAM_SYNC_INTERVAL_MINUTES ENGRAM_SYNC_DEBOUNCE_SECONDS ENGRAM_SYNC_TIMEOUT_MS \
  ENGRAM_SYNC_MACHINE ENGRAM_HOOK_DEADLINE_MS ENGRAM_HOOK_RECALL ENGRAM_HOOK_EXTRACT ENGRAM_HOOK_WORKER \
  ENGRAM_HOOK_TRANSCRIPT_READ_TRIES ENGRAM_HOOK_WORKER_LINGER_MS ENGRAM_HOOK_SERVER ENGRAM_HOOK_SERVER_IDLE_MS \
  COPILOT_PROJECT_DIR GEMINI_PROJECT_DIR COPILOT_HOME; do
  record "$variable"
done
cd -P . 2>/dev/null || slow
escape "$PWD" || slow

if [ "$mode" = ask ]; then
  header="{\"v\":1,\"event\":\"$event\",\"agent\":\"$agent\",\"pwd\":\"$escaped\",\"env\":{$recorded}}"
  reply=$(printf '%s\n%s\n' "$header" "$input" | curl -s --fail --unix-socket "$socket" --max-time 2 \
    -H 'Content-Type: application/octet-stream' -H 'Expect:' --data-binary @- http://engram/hook 2>/dev/null)
  status=$?
  case $status in
    0)
      [ -z "$reply" ] || printf '%s\n' "$reply"
      exit 0
      ;;
    7) asked="refused: a socket file with no server behind it" ;;
    22) asked="it answered an error (its build changed, or a question it does not take)" ;;
    28) asked="no answer within 2 s" ;;
    *) asked="curl exit $status" ;;
  esac
  slow
fi
header="{\"v\":1,\"event\":\"$name\",${agent:+\"agent\":\"$agent\",}\"pwd\":\"$escaped\",\"env\":{$recorded}}"

# A name no other waiting event has (an exclusive create), written whole, then renamed into place:
# the adopter only ever sees whole files.
set -C
n=0
while :; do
  file=$incoming/ev-$$-$n.json
  if [ ! -e "$file" ] && true 2>/dev/null >"$file.part"; then break; fi
  n=$((n + 1))
  [ $n -lt 100 ] || slow
done
set +C
if ! { printf '%s\n%s\n' "$header" "$input" >"$file.part"; } 2>/dev/null || ! mv -f "$file.part" "$file" 2>/dev/null; then
  rm -f "$file.part" 2>/dev/null
  slow
fi

# The adopter, unless one runs or another hook is starting it (hook-worker-lock.ts, the lock
# `worker-incoming.pid`: created exclusively, empty while starting, then the adopter's pid; a dead
# one's, or one untouched for two minutes, is moved away and taken).
lock=$home/spool/worker-incoming.pid
for attempt in 1 2; do
  set -C
  if true 2>/dev/null >"$lock"; then
    set +C
    # Detached (its own session, where setsid exists) and at the lowest CPU priority from its first
    # instruction: the hooks beside it keep the CPU (it lowers itself to hooks.workerNice later, when that is lower still).
    detach=
    command -v setsid >/dev/null 2>&1 && detach=setsid
    command -v nice >/dev/null 2>&1 && detach="$detach nice -n 19"
    $detach "$node" "$here/engram.mjs" hook adopt-events --from engram-plugin </dev/null >/dev/null 2>&1 &
    printf '%s' "$!" >"$lock" 2>/dev/null
    break
  fi
  set +C
  pid=
  read -r pid 2>/dev/null <"$lock"
  if [ -z "$pid" ]; then
    [ -n "$(find "$lock" -mmin +1 2>/dev/null)" ] || break
  elif kill -0 "$pid" 2>/dev/null; then
    [ -n "$(find "$lock" -mmin +2 2>/dev/null)" ] || break
  fi
  mv -f "$lock" "$lock.$$.stale" 2>/dev/null && rm -f "$lock.$$.stale"
done
exit 0
