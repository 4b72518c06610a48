"""``faxws cancel``: ask the service to cancel a job that has not ended (CancelFax)."""

from __future__ import annotations

import argparse
from contextlib import ExitStack

from faxws.cli import _client
from faxws.cli._output import EXIT_CODES_HELP, Outcome

SUMMARY = "cancel a job that has not ended (CancelFax)"
DESCRIPTION = """\
Ask the service to cancel a job that has not ended. An accepted cancel may still see the job
end otherwise (a fax being sent may finish): check with faxws status. A job that has ended is
a service error (exit 1), in the service's words."""
EXAMPLE = """\
example:
  faxws cancel SIM00000001
"""
EPILOG = EXAMPLE + "\n" + EXIT_CODES_HELP


def run(args: argparse.Namespace, out: Outcome) -> int:
    out.job_ids = [args.job_id]

    def action(stack: ExitStack) -> _client.Answer:
        client = stack.enter_context(_client.make_client(args))
        _client.sending(out, client)
        result = client.cancel_fax(args.job_id, request_id=out.request_id)
        data = {"job_id": result.job_id, "accepted": True}
        return result, data, [f"Cancel of job {result.job_id} accepted."]

    return _client.call(args, out, action, "the cancel was requested")
