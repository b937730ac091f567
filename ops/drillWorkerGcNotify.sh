#!/bin/bash
# The spot interruption drill's synthetic worker as GC Notify runs Celery (ops/drill.ts runs it in the AWS CLI's
# official image; docs/drill.md). GC Notify's burst workers run `celery worker --pidfile=/tmp/celery.pid --pool=threads
# --concurrency=4` (notification-api 72e3ae1e scripts/run_celery_*.sh; notification-manifests 609853e2
# helmfile/overrides/notify/celery.yaml.gotmpl:32-33) with Celery's default prefetch multiplier 4 (celery 5.6.3
# celery/app/defaults.py:348) and no acks_late anywhere (app/celery/celery.py:91-102). So does this one:
#
# - It writes its pid to CELERY_PIDFILE (/tmp/celery.pid), where the burst workers' preStop hook finds it.
# - Prefetch: it keeps up to CONCURRENCY x PREFETCH_MULTIPLIER received messages not yet started (kombu counts only
#   unacknowledged messages against the prefetch count, kombu 860e40a6 kombu/transport/virtual/base.py:198-205), and
#   starts them on CONCURRENCY threads in the order received.
# - Early acknowledgement: a thread deletes the message from SQS as its task starts (celery 5.6.3
#   celery/worker/request.py:515-522), then works it TASK_SECONDS[n mod length] seconds and records the completion in
#   DONE_QUEUE_URL ("<number> <pod> <started> <finished>", epoch seconds). A task killed mid-run is lost: its message
#   is gone. A message received but not started is still SQS's, and comes back after the visibility timeout.
# - On SIGTERM, Celery's warm shutdown: it receives nothing more, runs every message it holds to the end, and exits 0
#   (celery/apps/worker.py:378-380, celery/concurrency/thread.py:41-43). SIGKILL ends it and its threads at once.
#
# It logs as Celery does at INFO (celery/app/trace.py:53-60, celery/worker/strategy.py:161), so its lines read like a
# burst worker's: `Task drill.work[<n>] received`, `Task drill.work[<n>] succeeded in <s>s: None`.
#
# Environment: WORK_QUEUE_URL, DONE_QUEUE_URL, TASK_SECONDS (space-separated), CONCURRENCY, PREFETCH_MULTIPLIER;
# RECEIVE_WAIT_SECONDS (default 5), CELERY_PIDFILE (default /tmp/celery.pid). Bash 4.2 (the AWS CLI image's).
set -u
worker=$$
pidfile=${CELERY_PIDFILE:-/tmp/celery.pid}
read -r -a task_seconds <<< "$TASK_SECONDS"
prefetch=$((CONCURRENCY * PREFETCH_MULTIPLIER))
held=()
stopping=0
log() { printf '[%s: %s/MainProcess] %s\n' "$(date -u '+%Y-%m-%d %H:%M:%S,%3N')" "$1" "$2"; }
trap 'stopping=1; log WARNING "worker: Warm shutdown (MainProcess): running the ${#held[@]} held and the started tasks"' TERM

# One task on a thread: acknowledge (delete), work, and record it, unless the worker died meanwhile (a thread dies with
# its process; here the subshell would outlive a SIGKILLed worker and find itself another process's child).
work() {
    local handle=$1 n=$2 seconds=${task_seconds[$(($2 % ${#task_seconds[@]}))]} started finished ppid
    aws sqs delete-message --queue-url "$WORK_QUEUE_URL" --receipt-handle "$handle" || log ERROR "Task drill.work[$n] could not be acknowledged"
    started=$(date -u +%s.%3N)
    sleep "$seconds"
    read -r _ _ _ ppid _ < "/proc/$BASHPID/stat"
    [ "$ppid" = "$worker" ] || exit 0
    finished=$(date -u +%s.%3N)
    aws sqs send-message --queue-url "$DONE_QUEUE_URL" --message-body "$n $HOSTNAME $started $finished" > /dev/null \
        && log INFO "Task drill.work[$n] succeeded in ${seconds}s: None"
}
# The tasks still running, counted without a fork (the loop asks several times a second, and bash 4.2 has no wait -n).
threads=()
running() {
    local pid alive=()
    # ${a[@]+...}: bash before 4.4 calls an empty array unbound under set -u.
    for pid in ${threads[@]+"${threads[@]}"}; do kill -0 "$pid" 2> /dev/null && alive+=("$pid"); done
    threads=(${alive[@]+"${alive[@]}"})
    return 0
}

echo "$worker" > "$pidfile"
log INFO "celery@$HOSTNAME ready: $CONCURRENCY threads, up to $prefetch messages held, early acknowledgement, tasks of ${TASK_SECONDS// /, } s"
while :; do
    while [ ${#held[@]} -gt 0 ] && running && [ ${#threads[@]} -lt "$CONCURRENCY" ]; do
        entry=${held[0]}
        held=("${held[@]:1}")
        work "${entry%%$'\t'*}" "${entry#*$'\t'}" &
        threads+=($!)
    done
    if [ "$stopping" = 1 ]; then
        [ ${#held[@]} -eq 0 ] && running && [ ${#threads[@]} -eq 0 ] && break
        sleep 0.2
        continue
    fi
    room=$((prefetch - ${#held[@]}))
    if [ "$room" -le 0 ]; then
        sleep 0.2
        continue
    fi
    # Long-poll only when idle: a busy worker comes back to start the next held message within a second.
    wait=${RECEIVE_WAIT_SECONDS:-5}
    running
    [ ${#held[@]} -gt 0 ] || [ ${#threads[@]} -gt 0 ] && wait=1
    out=$(aws sqs receive-message --queue-url "$WORK_QUEUE_URL" --max-number-of-messages $((room < 10 ? room : 10)) \
        --wait-time-seconds "$wait" --output text --query 'Messages[].[ReceiptHandle,Body]') || { log ERROR "receive failed"; sleep 1; continue; }
    [ -z "$out" ] || [ "$out" = "None" ] && continue
    while IFS= read -r line; do
        held+=("$line")
        log INFO "Task drill.work[${line#*$'\t'}] received"
    done <<< "$out"
done
rm -f "$pidfile"
log INFO "worker: stopped"
exit 0
