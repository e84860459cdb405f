"""Airflow 2.4+ DAGs that fan post-reports-etl out over many processes on one schema.

Every process claims a window before loading it, so any number of runs may share a schema: a window claimed by
another run is left to it (counted in the summary as `windows.byOthers`), and every run exits 0 once each window
of its range is loaded, by it or by another.

- `post_reports_weekly`: one backfill per weekly interval, with catchup. Turned on with a start date in the
  past, Airflow runs up to 16 weeks of history at once.
- `post_reports_backfill_mapped`: triggered by hand with a range (`from_date`, `to_date`); a task asks the
  connector which windows a backfill would load (`plan`) and maps one task per window, so each window is a task
  of its own in the UI, with its own retries.

The workers need `post-reports-etl` on PATH (`npm install -g post-reports-etl`) and the connector's settings in
their environment (POST_REPORTS_BASE_URL, POST_REPORTS_TOKEN or _FILE, DATABASE_URL or _FILE, and
POST_REPORTS_SCHEMA, POST_REPORTS_WINDOW_DAYS when not the defaults): `plan` and the backfills must read the
same ones.

test/e2e/operations/recipes-fan-out.test.ts runs the command lines below (the constants) and window_commands.
"""

from __future__ import annotations

import json
import subprocess
from datetime import timedelta

# The command lines, kept apart so that the test runs exactly these.
#
# A weekly interval is Monday to Sunday: one window of the connector's 7-day grid (ISO weeks). `| tail -n 1`
# holds the summary line until the run has ended, so it is the last line of the task's output (where BashOperator
# merges stderr, the logs) and the one pushed to XCom; pipefail hands the task the connector's exit code, not
# tail's (always 0).
BACKFILL_INTERVAL_COMMAND = (
    "set -o pipefail; post-reports-etl backfill"
    " --from {{ data_interval_start | ds }} --to {{ macros.ds_add(data_interval_end | ds, -1) }} | tail -n 1"
)
# What a backfill of the range would do: one JSON line per window, `load` true for those it would load.
PLAN_COMMAND = "post-reports-etl plan --from {{ params.from_date }} --to {{ params.to_date }}"
# One window of that plan (str.format fields, filled by window_commands).
WINDOW_BACKFILL_COMMAND = "set -o pipefail; post-reports-etl backfill --from {start} --to {end} | tail -n 1"

# The connector's exit code for what needs a person (a bad setting, a rejected token, a missing privilege).
NEEDS_A_PERSON = 2


def window_commands(plan_output: str) -> list[str]:
    """One backfill command line per window that `plan` says a backfill would load, in the plan's order."""
    windows = [json.loads(line) for line in plan_output.splitlines() if line.strip()]
    return [WINDOW_BACKFILL_COMMAND.format(start=w["start"], end=w["end"]) for w in windows if w["load"]]


# Airflow itself is imported below the command lines and window_commands: the test evaluates those with a plain
# python3, where Airflow is not installed.
import pendulum  # noqa: E402
from airflow import DAG  # noqa: E402
from airflow.decorators import task  # noqa: E402
from airflow.exceptions import AirflowException, AirflowFailException, AirflowSkipException  # noqa: E402
from airflow.models.param import Param  # noqa: E402
from airflow.operators.bash import BashOperator  # noqa: E402

DEFAULT_ARGS = {
    # Exit 1 (the API or database unreachable), 3 (some windows failed: the same command loads just those) and 4
    # (a --reset or a migration of another run held the schema too long) are worth retrying.
    "retries": 3,
    "retry_delay": timedelta(minutes=5),
    "retry_exponential_backoff": True,
}


class PostReportsOperator(BashOperator):
    """A BashOperator that fails at once, without its retries, when the connector exits 2: retrying cannot help."""

    def execute(self, context):
        try:
            return super().execute(context)
        except AirflowSkipException:
            raise
        except AirflowException as error:
            # The bash process's code: the connector's, thanks to pipefail.
            process = self.subprocess_hook.sub_process
            if process is not None and process.returncode == NEEDS_A_PERSON:
                raise AirflowFailException(
                    f"post-reports-etl exited {NEEDS_A_PERSON}: it needs a person (see the log above)"
                ) from error
            raise


with DAG(
    dag_id="post_reports_weekly",
    # Mondays: each interval is one ISO week, one window of the default 7-day grid. A schedule not aligned to
    # the grid (`@weekly` starts on Sundays) would cut each week's window in two, each loaded by another run.
    schedule="0 3 * * 1",
    start_date=pendulum.datetime(2026, 1, 5, tz="UTC"),
    catchup=True,
    # Up to 16 weeks of history at once, all on one schema: each run claims its own window.
    max_active_runs=16,
    default_args=DEFAULT_ARGS,
    tags=["post-reports-etl"],
) as weekly:
    PostReportsOperator(
        task_id="backfill_interval",
        bash_command=BACKFILL_INTERVAL_COMMAND,
        do_xcom_push=True,  # the last line: the JSON summary
    )


with DAG(
    dag_id="post_reports_backfill_mapped",
    schedule=None,  # by hand: airflow dags trigger post_reports_backfill_mapped --conf '{"from_date": ...}'
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    params={
        "from_date": Param("2026-01-01", type="string", format="date"),
        "to_date": Param("2026-03-31", type="string", format="date"),
    },
    default_args=DEFAULT_ARGS,
    tags=["post-reports-etl"],
) as mapped:

    @task
    def plan(command: str) -> list[str]:
        # `command` arrives rendered: the arguments of a TaskFlow task are templated.
        run = subprocess.run(["bash", "-c", command], capture_output=True, text=True, check=False)
        if run.returncode != 0:
            failure = AirflowFailException if run.returncode == NEEDS_A_PERSON else AirflowException
            raise failure(f"post-reports-etl plan exited {run.returncode}: {run.stderr.strip()[-2000:]}")
        return window_commands(run.stdout)

    # One task per window to load. Windows another run loads meanwhile are skipped by theirs (exit 0).
    PostReportsOperator.partial(
        task_id="backfill_window",
        do_xcom_push=True,
        # How many windows load at once, across all runs of this DAG: the API's and the database's share.
        max_active_tis_per_dag=8,
    ).expand(bash_command=plan(PLAN_COMMAND))
