# A model of GC Notify's preStop hook, for `npm run drill -- --hook gc-notify` (the synthetic workers run it to
# reproduce the loss) and for tests: notification-api 72e3ae1e scripts/run_celery_exit.sh sends SIGTERM (:54), checks
# the worker once a second while wait_time <= TERMINATE_TIMEOUT=9 (:5, :57-64), exits 1 once it has gone (:37-46), and
# otherwise sends SIGKILL (:67), about 10 s after the SIGTERM whatever the grace period.
# Written from that reading (not a copy): it finds the worker by its pidfile, where the real script greps ps (:14).
pid=$(cat "${CELERY_PIDFILE:-/tmp/celery.pid}")
kill -TERM "$pid"
wait_time=0
while [[ $wait_time -le 9 ]]; do
  kill -0 "$pid" 2>/dev/null || exit 1
  wait_time=$((wait_time + 1))
  sleep 1
done
kill -KILL "$pid"
