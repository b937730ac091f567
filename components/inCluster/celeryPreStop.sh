# The preStop hook of every burst Celery container (CeleryWorkloadPlacement patches it in, as `bash -c <this file>
# celery-prestop <seconds>`). It replaces GC Notify's /app/scripts/run_celery_exit.sh, which SIGKILLs the worker about
# 10 s after SIGTERM whatever the grace period (notification-api 72e3ae1e scripts/run_celery_exit.sh:5, 57-67): GC
# Notify's Celery acknowledges a message as its task starts (no acks_late), so a task killed mid-run is lost.
#
# It sends SIGTERM at once, so the worker stops taking messages and starts Celery's warm shutdown: it runs every task
# it holds, then exits (celery 5.6.3 celery/apps/worker.py:378-380; with --pool=threads, the executor's shutdown runs
# every prefetched task too, celery/concurrency/thread.py:41-43). It waits for the worker to exit, and sends SIGKILL
# only when $1 seconds have passed: the pod's grace less a margin, so the kill comes before the kubelet's own.
#
# GC Notify's image only: bash, procps and coreutils (notification-api ci/Dockerfile:10-26).
#   $1  seconds from now to SIGKILL
#   CELERY_PIDFILE  the worker's pidfile, /tmp/celery.pid by default (every run_celery_*.sh passes --pidfile)
#   CELERY_PRESTOP_LOG  where to log, the container's stdout (/proc/1/fd/1) by default, as run_celery_exit.sh does
deadline=$((SECONDS + ${1:?usage: celery-prestop <seconds to SIGKILL>}))
log=${CELERY_PRESTOP_LOG:-/proc/1/fd/1}
say() { echo "celery-prestop: $*" >> "$log" 2>/dev/null || true; }

pid=$(cat "${CELERY_PIDFILE:-/tmp/celery.pid}" 2>/dev/null)
if ! [[ $pid =~ ^[0-9]+$ ]] || ! kill -0 "$pid" 2>/dev/null; then
  # No live pidfile: the oldest `celery ... worker` process, as run_celery_exit.sh finds it (:14).
  pid=$(ps -eo pid=,args= --sort=start_time | awk '/bin\/celery/ && / worker/ && !/awk/ { print $1; exit }')
fi
if [ -z "$pid" ]; then
  say "no Celery worker is running"
  exit 0
fi

say "SIGTERM to Celery worker $pid: it finishes the tasks it holds; SIGKILL in $1 s if it has not exited"
kill -TERM "$pid" 2>/dev/null
while kill -0 "$pid" 2>/dev/null; do
  if ((SECONDS >= deadline)); then
    say "SIGKILL to Celery worker $pid: still running after $1 s"
    kill -KILL "$pid" 2>/dev/null
    exit 0
  fi
  sleep 0.5
done
say "Celery worker $pid exited after $((SECONDS - deadline + $1)) s"
