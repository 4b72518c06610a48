"""`make demo`: the main job end to end, against a local simulator.

Starts the simulator on a free port, sends a sample PDF to two recipients with the `faxws`
command, asks for the broadcast report, prints what the simulator received (secrets masked),
and stops the simulator, also when a step fails.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

from faxws.testing import (
    DEMO_CLIENT_ID,
    DEMO_CLIENT_SECRET,
    DEMO_PIN,
    DEMO_USER_ID,
    FaxWSSimulator,
)

FAXWS = [sys.executable, "-m", "faxws"]


def sample_pdf() -> bytes:
    """A one-page PDF that says hello; built here so the demo ships no binary."""
    text = b"BT /F1 24 Tf 72 720 Td (Hello from faxws) Tj ET"
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n%s\nendstream" % (len(text), text),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)


def run(step: str, args: list[str], env: dict[str, str], folder: Path) -> dict[str, object]:
    """``faxws ARGS`` in ``folder``, shown as a command a shell takes as it is (quoted)."""
    print(f"\n$ {shlex.join(['faxws', *args])}")
    done = subprocess.run(
        FAXWS + args, env=env, cwd=folder, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        sys.stderr.write(done.stderr)
        raise SystemExit(f"demo: step '{step}' failed with exit code {done.returncode}")
    data: dict[str, object] = json.loads(done.stdout)
    return data


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp, FaxWSSimulator() as sim:
        folder = Path(tmp)
        pdf = folder / "hello.pdf"
        pdf.write_bytes(sample_pdf())
        print(f"Simulator running at {sim.url} (user {DEMO_USER_ID})")
        print(
            "Each command below runs in hello.pdf's folder, with FAXWS_BASE_URL and "
            "FAXWS_USER_ID as above\nand FAXWS_PIN set (the report: FAXWS_TOKEN_URL, "
            "FAXWS_CLIENT_ID and FAXWS_CLIENT_SECRET instead)."
        )
        env = {
            **os.environ,
            "FAXWS_BASE_URL": sim.url,
            "FAXWS_USER_ID": DEMO_USER_ID,
            "FAXWS_PIN": DEMO_PIN,
        }
        sent = run(
            "send",
            [
                "send",
                "--to",
                "+1 555 0100",
                "--name",
                "Ada",
                "--to",
                "+1 555 0101",
                "--name",
                "Grace",
                pdf.name,
                "--json",
            ],
            env,
            folder,
        )
        job_ids = sent["job_ids"]
        assert isinstance(job_ids, list)
        print(f"  job ids:    {', '.join(job_ids)}")
        print(f"  request id: {sent['request_id']}")
        # The report in OAuth 2.0 mode: a token from the simulator's token endpoint.
        oauth_env = {k: v for k, v in env.items() if k != "FAXWS_PIN"}
        oauth_env |= {
            "FAXWS_TOKEN_URL": sim.token_url,
            "FAXWS_CLIENT_ID": DEMO_CLIENT_ID,
            "FAXWS_CLIENT_SECRET": DEMO_CLIENT_SECRET,
        }
        report = run("report", ["report", str(job_ids[0]), "--json"], oauth_env, folder)
        print(f"  report accepted for {report['job_id']}, request id {report['request_id']}")

        print("\nWhat the simulator received:")
        for number, request in enumerate(sim.requests, 1):
            print(
                f"  request {number}: {request.method} {request.path} "
                f"({request.operation}, {len(request.body)} bytes)"
            )
            for key, value in request.masked_headers().items():
                print(f"    {key}: {value}")
        print(f"  token endpoint: {sim.token_requests} request(s)")
        for job in sim.jobs:
            print(f"  job {', '.join(job.job_ids)} ({job.auth_mode} mode)")
            for r in job.recipients:
                print(f"    recipient {r.recip_fax_number} {r.recip_name}")
            for f in job.files:
                print(f"    file {f.index}: type {f.file_type}, {len(f.data)} bytes")
    # The demo's simulator and folder are gone now: the commands paste against one's own.
    print(
        "\nTo run the commands above yourself: start `faxws serve --port 8080` in another "
        "terminal;\nthen, in a folder with a PDF named hello.pdf, with FAXWS_PIN set to the "
        "PIN it shows:\n  export FAXWS_BASE_URL=http://127.0.0.1:8080 "
        f"FAXWS_USER_ID={DEMO_USER_ID}"
    )
    print("\nSimulator stopped. Demo complete.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
