#!/bin/bash
# Stands in for mpirun in run_sweep_logic.sh. Logs its arguments (one line per launch), then acts
# out line N of $FAKE_PLAN for launch N: "exit CODE", or "until-signal CODE" (runs until SIGUSR1
# and then exits CODE, as a sweep does after checkpointing; gives up after 60 s so that a broken
# run_sweep.sh leaves no process behind).
echo "$*" >>"$FAKE_LOG"
launch=$(wc -l <"$FAKE_LOG")
step=$(sed -n "${launch}p" "$FAKE_PLAN")
case $step in
  "exit "*) exit "${step#exit }" ;;
  "until-signal "*)
    trap 'exit ${step#until-signal }' USR1
    touch "$FAKE_LOG.running"
    for _ in $(seq 600); do sleep 0.1; done
    exit 98 ;;
  *) echo "fake_mpirun: no plan for launch $launch" >&2; exit 99 ;;
esac
