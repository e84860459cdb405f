"""A Dagster asset partitioned by week: each partition is one backfill of its week by post-reports-etl.

A backfill of many partitions launches many runs at once, all on one schema: each window is claimed by one
process at a time, so the runs never load a window twice, and each exits 0 once its week is loaded.

The code location needs `post-reports-etl` on PATH (`npm install -g post-reports-etl`) and the connector's
settings in its environment (POST_REPORTS_BASE_URL, POST_REPORTS_TOKEN or _FILE, DATABASE_URL or _FILE,
POST_REPORTS_SCHEMA when not the default).

test/e2e/operations/recipes-fan-out.test.ts calls command_for with a plain python3 and runs what it returns.
"""

from __future__ import annotations

import json
import subprocess
from datetime import timedelta

# The connector's exit code for what needs a person (a bad setting, a rejected token, a missing privilege).
NEEDS_A_PERSON = 2


def command_for(start: str, end: str) -> list[str]:
    """The argv that loads the dates from `start` to `end` (YYYY-MM-DD, both included)."""
    return ["post-reports-etl", "backfill", "--from", start, "--to", end]


# Dagster itself is imported below command_for: the test evaluates that with a plain python3, where Dagster is not
# installed.
from dagster import (  # noqa: E402
    AssetExecutionContext,
    Backoff,
    Failure,
    MaterializeResult,
    RetryPolicy,
    WeeklyPartitionsDefinition,
    asset,
)

# Weeks from Monday (day_offset=1) in UTC: one partition is one window of the connector's default 7-day grid (ISO
# weeks). Partitions starting on Sundays (the default) would cut each window in two, each loaded by another run.
WEEKS = WeeklyPartitionsDefinition(start_date="2026-01-05", day_offset=1, timezone="UTC")


@asset(
    partitions_def=WEEKS,
    # Exit 1 (the API or database unreachable), 3 (some windows failed: the same command loads just those) and 4
    # (a --reset or a migration of another run held the schema too long) are worth retrying; 2 is not (below).
    retry_policy=RetryPolicy(max_retries=3, delay=300, backoff=Backoff.EXPONENTIAL),
)
def post_reports(context: AssetExecutionContext) -> MaterializeResult:
    window = context.partition_time_window  # [start, end): the end is the next partition's first day
    start = window.start.date().isoformat()
    end = (window.end - timedelta(days=1)).date().isoformat()
    # The logs (stderr) go to the run's compute logs; stdout is the one summary line.
    run = subprocess.run(command_for(start, end), stdout=subprocess.PIPE, text=True, check=False)
    lines = run.stdout.strip().splitlines()
    summary = json.loads(lines[-1]) if lines else {}
    if run.returncode != 0:
        raise Failure(
            description=f"post-reports-etl exited {run.returncode}: {summary.get('status')}",
            metadata={"summary": json.dumps(summary)},
            # Exit 2 needs a person: fail at once instead of spending the retries.
            allow_retries=run.returncode != NEEDS_A_PERSON,
        )
    windows = summary["windows"]
    return MaterializeResult(
        metadata={
            "posts": summary["posts"],
            "windows_loaded": windows["loaded"],
            "windows_by_others": windows.get("byOthers", 0),
        }
    )
