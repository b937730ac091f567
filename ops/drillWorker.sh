#!/bin/bash
# The spot interruption drill's synthetic Celery-like worker (ops/drill.ts runs it in the AWS CLI's official image as
# the container's command; docs/drill.md). It long-polls WORK_QUEUE_URL for numbered messages, "works" each one for
# WORK_SECONDS, records the completion in DONE_QUEUE_URL ("<number> <pod> <started> <finished>", epoch seconds) and
# only then deletes the message, as Celery acknowledges late: a worker killed mid-task leaves its message to come
# back after the visibility timeout, never lost.
#
# On SIGTERM it does what Celery's warm shutdown does: it takes no more messages, finishes the one it is working, and
# exits 0. Bash runs the trap once the command in the foreground (the work, or a receive) returns, so the current
# message is always finished. A message received after SIGTERM is handed back at once (visibility 0).
#
# Environment: WORK_QUEUE_URL, DONE_QUEUE_URL, WORK_SECONDS, VISIBILITY_TIMEOUT; RECEIVE_WAIT_SECONDS (default 5).
set -u
stopping=0
log() { echo "$(date -u +%Y-%m-%dT%H:%M:%SZ) $HOSTNAME $*"; }
trap 'stopping=1; log "SIGTERM: taking no more messages; finishing the current one"' TERM

log "worker started: ${WORK_SECONDS} s a message, visibility ${VISIBILITY_TIMEOUT} s"
while [ "$stopping" = 0 ]; do
    out=$(aws sqs receive-message --queue-url "$WORK_QUEUE_URL" --max-number-of-messages 1 \
        --wait-time-seconds "${RECEIVE_WAIT_SECONDS:-5}" --visibility-timeout "$VISIBILITY_TIMEOUT" \
        --output text --query 'Messages[0].[ReceiptHandle,Body]') || { log "receive failed"; sleep 1; continue; }
    if [ -z "$out" ] || [ "$out" = "None" ]; then continue; fi
    handle=${out%%$'\t'*}
    body=${out#*$'\t'}
    if [ "$stopping" = 1 ]; then
        aws sqs change-message-visibility --queue-url "$WORK_QUEUE_URL" --receipt-handle "$handle" --visibility-timeout 0 >/dev/null
        log "message $body handed back"
        break
    fi
    started=$(date -u +%s)
    log "message $body: working"
    sleep "$WORK_SECONDS"
    aws sqs send-message --queue-url "$DONE_QUEUE_URL" --message-body "$body $HOSTNAME $started $(date -u +%s)" >/dev/null \
        && aws sqs delete-message --queue-url "$WORK_QUEUE_URL" --receipt-handle "$handle" \
        && log "message $body: done"
done
log "stopped"
exit 0
