"""``faxws report``: ask for a job's broadcast report (GetFaxBroadcastReport)."""

from __future__ import annotations

import argparse
import textwrap
from contextlib import ExitStack

from faxws.cli import _client
from faxws.cli._output import EXIT_CODES_HELP, Outcome

SUMMARY = "request a broadcast report (GetFaxBroadcastReport)"
#: What the call's answer means: the service answers with a flag, not with the report.
NOT_RETURNED = (
    "The service accepted the request; the report itself is not returned by this call: it is "
    "delivered by the service out of band, and its format is not published."
)
DESCRIPTION = "Ask for the broadcast report of a job, optionally for one recipient.\n\n"
DESCRIPTION += textwrap.fill(NOT_RETURNED, 92)
EXAMPLE = """\
example:
  faxws report SIM00000001 --recipient-type 1 --address ops@example.com
"""
EPILOG = EXAMPLE + "\n" + EXIT_CODES_HELP


def run(args: argparse.Namespace, out: Outcome) -> int:
    out.job_ids = [args.job_id]

    def action(stack: ExitStack) -> _client.Answer:
        client = stack.enter_context(_client.make_client(args))
        _client.sending(out, client)
        result = client.get_fax_broadcast_report(
            args.job_id, args.recipient_type, args.address, request_id=out.request_id
        )
        target = f" for {result.recip_address} (type {result.recipient_type})"
        target = target if result.recip_address else ""
        data = {
            "job_id": result.job_id,
            "recipient_type": result.recipient_type,
            "recip_address": result.recip_address,
            "accepted": True,
            "note": NOT_RETURNED,
        }
        return result, data, [f"Report requested for job {result.job_id}{target}.", NOT_RETURNED]

    return _client.call(args, out, action, "the report was requested")
