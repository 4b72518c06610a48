"""Usage errors of the `faxws` command: JSON with --json, never a secret, flags named as the
user typed them, no traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from faxws._protocol.redact import secret_forms

CLEAN_ENV = {k: v for k, v in os.environ.items() if not k.startswith("FAXWS_")}
#: A secret with characters that each escaping (XML, URL, JSON, repr) writes differently.
MARKER = "zQ7-S3cr3t&<x>'\"%2F\\ü"
M = MARKER


def faxws(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "faxws", *args],
        env={**CLEAN_ENV, **(env or {})},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=60,
        check=False,
    )


def json_error(done: subprocess.CompletedProcess[str]) -> dict[str, object]:
    """The one JSON object on stdout, which must be an error."""
    data = json.loads(done.stdout)
    assert set(data) == {"error"}
    error: dict[str, object] = data["error"]
    assert {"type", "message", "request_id", "status_code", "maybe_delivered"} <= set(error)
    return error


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["frobnicate"],
        ["send"],
        ["send", "x.pdf"],
        ["send", "--to"],
        ["send", "--to", "1", "x.pdf", "--bogus"],
        ["report"],
        ["report", "J1", "--recipient-type", "one"],
        ["report", "J1"],  # no service URL
        ["send", "--to", "1", "--name", "a", "--name", "b", "x.pdf"],  # more names than numbers
        ["serve", "--port", "x"],
        ["serve", "--pin", "1234"],  # no --user-id
        ["validate"],
        ["--json=yes", "send"],
    ],
)
def test_json_for_every_usage_error(args: list[str]) -> None:
    done = faxws(*args, "--json")
    assert done.returncode == 2, done.stderr
    error = json_error(done)
    assert (error["type"], error["maybe_delivered"]) == ("UsageError", False)
    assert error["message"]
    assert str(error["message"]) in done.stderr  # the same words on stderr
    assert "Traceback" not in done.stderr


def test_without_json_usage_errors_stay_text() -> None:
    done = faxws("frobnicate")
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.startswith("usage: faxws")
    assert done.stderr.splitlines()[-1] == (
        "faxws: error: argument COMMAND: invalid choice "
        "(choose from send, status, cancel, report, serve, batch, validate)"
    )


SEND = ["send", "--to", "+1 555 0100", "x.pdf"]
MISUSES = [
    ["--token", M, *SEND],
    ["--pin", M, *SEND],
    ["--client-secret", M, "report", "J1"],
    [f"--token={M}", *SEND],
    [f"--pin={M}", *SEND],
    [f"--client-secret={M}"],
    [M],
    [M, "send"],
    ["sned", "--token", M],
    [*SEND, "--pn", M],
    [*SEND, f"--pi={M}"],
    [*SEND, f"--tok={M}"],
    [*SEND, "--timeout", M],
    [*SEND, f"--timeout={M}"],
    [*SEND, f"-v{M}"],
    [*SEND, f"--json={M}"],
    [*SEND, f"--verbose={M}"],
    [*SEND, "--pin", M, "--pin"],
    [*SEND, "--pin", M, "extra", "--wrong"],
    ["send", "--pin", M],
    ["report", "--token", M],
    ["report", "J1", "--recipient-type", M],
    ["report", "J1", "--pin", M, "--recipient-type", M],
    ["serve", "--port", M],
    ["serve", "--token-lifetime", M],
    ["serve", "--base-url", M],
    ["serve", "--client-secret", M, "--bogus", M],
    ["serve", "--pin", M],  # no --user-id
    ["validate", "--pin", M, "x.xml"],
    ["validate", f"--token={M}", "x.xml"],
    ["validate", "--max-issues", M, "x.xml"],
]


@pytest.mark.parametrize("json_flag", [[], ["--json"]], ids=["text", "json"])
@pytest.mark.parametrize("args", MISUSES, ids=[str(i) for i in range(len(MISUSES))])
def test_usage_errors_never_show_a_secret(args: list[str], json_flag: list[str]) -> None:
    done = faxws(*args, *json_flag)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    shown = done.stdout + done.stderr
    leaked = [form for form in secret_forms(MARKER) if form in shown]
    assert leaked == [], shown
    if json_flag:
        json_error(done)


@pytest.mark.parametrize(
    "args",
    [
        ["report", "J1", "--recipient-type", M],  # the value of a secret variable, misplaced
        [M],
        ["send", "--to", "+1 555 0100", "--file-type", M, "x.pdf"],
        ["send", "--to", "+1 555 0100", M],  # as a file name
    ],
)
@pytest.mark.parametrize("variable", ["FAXWS_PIN", "FAXWS_TOKEN", "FAXWS_CLIENT_SECRET"])
def test_secret_variables_never_show(args: list[str], variable: str) -> None:
    env = {
        "FAXWS_BASE_URL": "http://127.0.0.1:9",
        "FAXWS_USER_ID": "u",
        "FAXWS_PIN": "PIN-77",
        variable: MARKER,
    }
    done = faxws(*args, "--json", env=env)
    assert done.returncode == 2, done.stderr
    shown = done.stdout + done.stderr
    assert [form for form in secret_forms(MARKER) if form in shown] == [], shown


@pytest.mark.parametrize(
    ("args", "flag"),
    [
        (["--port", "70000"], "--port"),
        (["--port", "65536"], "--port"),
        (["--port", "-1"], "--port"),
        (["--port", "http"], "--port"),
        (["--port", "8080.5"], "--port"),
        (["--port", ""], "--port"),
        (["--token-lifetime", "inf"], "--token-lifetime"),
        (["--token-lifetime", "nan"], "--token-lifetime"),
        (["--token-lifetime", "-1"], "--token-lifetime"),
        (["--token-lifetime", "0"], "--token-lifetime"),
        (["--token-lifetime", "soon"], "--token-lifetime"),
        (["--max-jobs", "0"], "--max-jobs"),
        (["--max-jobs", "many"], "--max-jobs"),
    ],
)
def test_serve_refuses_bad_numbers_as_usage_errors(args: list[str], flag: str) -> None:
    done = faxws("serve", *args)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert done.stderr.splitlines()[-1].startswith(f"faxws serve: error: argument {flag}: ")


@pytest.mark.parametrize("value", ["nan", "inf", "-1", "0", "soon"])
def test_timeout_must_be_a_finite_number_of_seconds(value: str) -> None:
    done = faxws("report", "J1", "--base-url", "http://127.0.0.1:9", "--timeout", value)
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1] == (
        "faxws report: error: argument --timeout: must be a finite number of seconds > 0"
    )


@pytest.fixture
def pdf(tmp_path: Path) -> Path:
    path = tmp_path / "letter.pdf"
    path.write_bytes(b"%PDF-1.4")
    return path


def test_messages_name_the_flags(pdf: Path) -> None:
    done = faxws(
        "send",
        "--base-url",
        "http://fax.example.com",
        "--user-id",
        "u",
        "--pin",
        "PIN-77",
        "--to",
        "+1 555 0100",
        str(pdf),
        "--json",
    )
    assert done.returncode == 2
    message = (
        "--base-url: plain http to fax.example.com would expose the credentials; use https "
        "(or pass --insecure-http)"
    )
    assert done.stderr == f"faxws send: BadInputError: {message}\n"
    assert json_error(done)["message"] == message


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--to", "+1 555 0100", "--to", "no digits"],
            "--to (recipient 2): '***' has no digits",
        ),
        (["--to", "+1 555 0100", "--file-type", "zip"], "--file-type: unknown file type '***'"),
        (
            ["--to", "+1 555 0100", "--to", "eyJhbGciOiJSUzINiJ.TOKENMARK"],
            "--to (recipient 2): '***' has no digits",
        ),
        (["--to", "+1 555 0100", "--request-id", "a b"], "--request-id: contains U+0020"),
        (["--to", "+1 555 0100", "--user-id", "a\x01"], "--user-id: contains U+0001"),
    ],
    ids=["to", "file-type", "a token typed as a number", "request-id", "user-id"],
)
def test_bad_input_names_the_flag(pdf: Path, args: list[str], message: str) -> None:
    env = {"FAXWS_BASE_URL": "http://127.0.0.1:9", "FAXWS_USER_ID": "u", "FAXWS_PIN": "PIN-77"}
    done = faxws("send", *args, str(pdf), "--json", env=env)
    assert done.returncode == 2, done.stderr
    error = json_error(done)
    assert str(error["message"]).startswith(message)
    assert message.startswith(f"{error['field']}: ")
    assert done.stderr.startswith(f"faxws send: BadInputError: {message}")
    for name in ("recipients[", "fax_number", "file_type", "request_id", "user_id"):
        assert name not in done.stderr + str(error["message"])  # no Python argument names


def test_a_connect_error_keeps_its_cause(refused_port: int) -> None:
    port = refused_port
    done = faxws(
        "report",
        "J1",
        "--base-url",
        f"http://127.0.0.1:{port}",
        "--user-id",
        "u",
        "--pin",
        "PIN-77",
        "--json",
    )
    assert done.returncode == 4
    message = str(json_error(done)["message"])
    assert "Connection refused" in message
    [line] = done.stderr.splitlines()
    assert line.startswith(f"faxws report: ConnectError: {message} (request id ")


def test_an_unexpected_failure_is_one_json_error_without_secrets(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from faxws import cli
    from faxws.cli import _client

    def broken(args: object) -> object:
        raise RuntimeError(f"unexpected, with {MARKER}")

    monkeypatch.setattr(_client, "make_client", broken)
    monkeypatch.setenv("FAXWS_TOKEN", MARKER)
    code = cli.main(["report", "J1", "--json"])
    out, err = capsys.readouterr()
    assert code == 1
    error = json.loads(out)["error"]
    assert error["type"] == "RuntimeError"
    assert error["message"] == "unexpected, with ***"
    assert [form for form in secret_forms(MARKER) if form in out + err] == []
    assert len(err.splitlines()) == 1


@pytest.mark.parametrize(
    "args",
    [["report", "J1"], ["send", "--to", "+1 555 0100", "doc.pdf"]],
    ids=["report", "send"],
)
def test_every_command_that_calls_the_service_builds_its_client_in_one_place(
    args: list[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from faxws import cli
    from faxws.cli import _client

    seen: list[object] = []

    def refuse(options: object) -> object:
        seen.append(options)
        raise RuntimeError("built here")

    (tmp_path / "doc.pdf").write_bytes(b"%PDF-1.4")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(_client, "make_client", refuse)
    code = cli.main([*args, "--json"])
    error = json.loads(capsys.readouterr().out)["error"]
    assert (code, error["type"], error["message"]) == (1, "RuntimeError", "built here")
    assert len(seen) == 1


def test_the_console_script_and_python_m_run_main() -> None:
    from importlib.metadata import entry_points

    from faxws import cli

    [script] = entry_points(group="console_scripts", name="faxws")
    assert script.load() is cli.main
    done = faxws("--version")
    assert (done.returncode, done.stdout.split()[0]) == (0, "faxws")


# -- usage errors name the command and the argument, with the command's usage ---------------


@pytest.mark.parametrize(
    ("args", "command", "message"),
    [
        (
            ["send", "--to", "+1", "555", "0100", "--name", "Ada", "--to", "+1", "555", "0101",
             "letter.pdf"],
            "send",
            "argument --to: takes one value, and words that no argument takes follow it (values "
            'are not shown); quote a value with spaces: --to "+1 555 0100"',
        ),
        (
            ["send", "--to", "+1 555 0100", "letter.pdf", "--cover-text", "Hello", "Thereafter"],
            "send",
            "argument --cover-text: takes one value, and words that no argument takes follow it "
            '(values are not shown); quote a value with spaces: --cover-text "..."',
        ),
        (
            ["send", "--to=+1", "555", "--name", "Ada", "--to=+1", "0199", "letter.pdf"],
            "send",
            "argument --to: takes one value, and words that no argument takes follow it (values "
            'are not shown); quote a value with spaces: --to "+1 555 0100"',
        ),
        (
            ["send", "--to", "+1 555 0100", "letter.pdf", "--bogus"],
            "send",
            "unrecognized arguments: --bogus",
        ),
        (["cancel", "J1", "JOB-TWO"], "cancel", "unrecognized arguments (values are not shown)"),
        (
            ["batch", "send", "m.csv", "--journal", "j.db", "--bogus", "BOGUS-VALUE"],
            "batch send",
            "unrecognized arguments: --bogus (values are not shown)",
        ),
    ],
    ids=["to-unquoted", "text-unquoted", "to-equals", "unknown-flag", "extra-word", "batch"],
)  # fmt: skip
def test_a_usage_error_names_the_command_and_shows_its_usage(
    args: list[str], command: str, message: str
) -> None:
    done = faxws(*args)
    assert done.returncode == 2
    lines = done.stderr.splitlines()
    assert lines[0].startswith(f"usage: faxws {command} [-h]")  # the command's, not faxws's
    assert lines[-1] == f"faxws {command}: error: {message}"
    for value in ("0101", "0199", "Thereafter", "JOB-TWO", "BOGUS-VALUE"):  # never a value
        assert value not in done.stderr
    error = json_error(faxws(*args, "--json"))
    assert error["message"] == message


@pytest.mark.parametrize("args", MISUSES[:12], ids=[str(i) for i in range(12)])
def test_an_unquoted_value_after_a_secret_is_not_shown(args: list[str]) -> None:
    done = faxws(*args, "two", "words")
    assert done.returncode == 2
    shown = done.stdout + done.stderr
    assert [form for form in secret_forms(MARKER) if form in shown] == [], shown


@pytest.mark.parametrize("name", ["scan.tif", "scan.TIFF"])
def test_a_tiff_without_file_type_names_the_commands_values(tmp_path: Path, name: str) -> None:
    from faxws import BadInputError, FaxFile

    scan = tmp_path / name
    scan.write_bytes(b"II*\x00")
    env = {"FAXWS_BASE_URL": "http://127.0.0.1:9", "FAXWS_USER_ID": "u", "FAXWS_PIN": "PIN-77"}
    done = faxws("send", "--to", "+1 555 0100", str(scan), "--json", env=env)
    assert done.returncode == 2, done.stderr
    ext = name.rpartition(".")[2].lower()
    message = (
        f"--file-type: cannot infer the type of {name!r} from its extension '.{ext}' (TIFF has "
        "several types); pass --file-type tiff_g3|tiff_g4|tiff_color"
    )
    assert json_error(done)["message"] == message
    assert done.stderr == f"faxws send: BadInputError: {message}\n"
    # The Python API keeps its own words, for Python callers.
    with pytest.raises(BadInputError, match=r"FileType\.TIFF_G3"):
        FaxFile.from_path(scan)


def test_each_tiff_type_the_hint_names_is_one_the_command_takes() -> None:
    from faxws import FileType
    from faxws.cli._send import TIFF_TYPES
    from faxws.models import file_type_from_name

    named = [file_type_from_name(t) for t in TIFF_TYPES.split("|")]
    assert named == [FileType.TIFF_G3, FileType.TIFF_G4, FileType.TIFF_COLOR]


# -- a value with spaces, unquoted, whose other words argparse took for FILE or JOB_ID -------

_SPLIT = (
    "argument {0}: takes one value, and words that no argument takes follow it (values are not "
    "shown); quote a value with spaces: {0} {1}"
)
_OAUTH = ["--token-url", "https://auth.example/token", "--client-id", "c"]


@pytest.mark.parametrize(
    ("args", "message", "hidden"),
    [
        (["send", "--to", "+1", "555", "0199", "letter.pdf"],
         _SPLIT.format("--to", '"+1 555 0100"'), ["0199"]),
        (["send", "--name", "Grace", "Hopper", "--to", "+1 555 0100", "letter.pdf"],
         _SPLIT.format("--name", '"Ada Lovelace"'), ["Hopper"]),
        (["send", "--to", "1", "--cover-text", "Hello", "world", "letter.pdf"],
         _SPLIT.format("--cover-text", '"..."'), ["world"]),
        (["send", "--to", "1", "--pin", "12", "Zq9x34", "letter.pdf"],
         _SPLIT.format("--pin", '"..."'), ["Zq9x34"]),
        (["send", "--to", "1", "--pin", "12", "-3456", "letter.pdf"],
         _SPLIT.format("--pin", '"..."'), ["3456"]),
        (["send", "--to", "1", "--client-secret=ab", "Zq9xcd", "letter.pdf", *_OAUTH],
         _SPLIT.format("--client-secret", '"..."'), ["Zq9xcd"]),
        (["send", "--to", "1", "--token", "Bearer", "Zq9x.part", "letter.pdf"],
         "FILE 1: no such file (its name is not shown: it follows the value of --token, and may "
         'be part of it; quote a value with spaces: --token "...")', ["Zq9x"]),
        (["send", "--to", "1", "--pin", "1234", "missing.pdf"],
         "FILE 1: no such file (its name is not shown: it follows the value of --pin, and may "
         'be part of it; quote a value with spaces: --pin "...")', ["missing"]),
        (["send", "--to", "1", "--pin", "1234", "letter.pdf", "--pin", "56", "Zq9x.78"],
         _SPLIT.format("--pin", '"..."'), ["Zq9x"]),
        (["status", "--reference", "invoice", "Zq9x41"],
         _SPLIT.format("--reference", '"..."'), ["Zq9x41"]),
    ],
    ids=["to", "name", "cover-text", "pin", "pin-negative", "client-secret", "token-dotted",
         "pin-missing-file", "pin-again", "reference"],
)  # fmt: skip
@pytest.mark.parametrize("json_flag", [[], ["--json"]], ids=["text", "json"])
def test_words_of_an_unquoted_value_taken_for_files_are_named_by_its_option(
    pdf: Path,
    monkeypatch: pytest.MonkeyPatch,
    args: list[str],
    message: str,
    hidden: list[str],
    json_flag: list[str],
) -> None:
    """``--to +1 555 0100 letter.pdf`` (one recipient: "555" and "0100" become files) and
    ``--token Bearer abc.def``: the option is named, never a word, which after a secret may
    be part of it; before any file is read."""
    monkeypatch.chdir(pdf.parent)
    env = {"FAXWS_BASE_URL": "http://127.0.0.1:9", "FAXWS_USER_ID": "u", "FAXWS_PIN": "PIN-77"}
    done = faxws(*args, *json_flag, env=env)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.splitlines()
    assert lines[0].startswith(f"usage: faxws {args[0]} [-h]")
    assert lines[-1] == f"faxws {args[0]}: error: {message}"
    for word in hidden:
        assert word not in done.stdout + done.stderr
    if json_flag:
        assert json_error(done)["message"] == message


@pytest.mark.parametrize(
    ("args", "code", "line"),
    [
        (["send", "--to", "1", "--pin", "1234", "letter.pdf"], 4, "ConnectError: cannot connect"),
        (["send", "--to", "1", "missing.pdf"], 2,
         "BadInputError: FILE: cannot read 'missing.pdf': No such file or directory"),
        (["status", "--request-id", "r-1", "SIM1"], 4, "ConnectError: cannot connect"),
        (["send", "--to", "1", "--", "-letter.pdf"], 2,
         "BadInputError: FILE: cannot read '-letter.pdf': No such file or directory"),
        (["send", "--to", "1", "--timeout", "5", "notes"], 2,
         "BadInputError: --file-type: cannot infer the type of 'notes'"),  # no word of a value
        (["validate", "--max-issues", "5", "request"], 2, "request: cannot read"),
    ],
    ids=["file-after-a-pin", "missing-file", "job-after-a-value", "after-double-dash",
         "after-a-number", "validate"],
)  # fmt: skip
def test_words_that_are_meant_as_files_or_job_ids_still_are(
    pdf: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], code: int, line: str
) -> None:
    monkeypatch.chdir(pdf.parent)
    env = {"FAXWS_BASE_URL": "http://127.0.0.1:9", "FAXWS_USER_ID": "u", "FAXWS_PIN": "PIN-77"}
    done = faxws(*args, env=env)
    assert done.returncode == code, done.stderr
    assert done.stderr.startswith(line if args[0] == "validate" else f"faxws {args[0]}: {line}")


_CLIENT = {"FAXWS_CLIENT_ID": "c", "FAXWS_CLIENT_SECRET": "S3cret-77"}


@pytest.mark.parametrize(
    ("key", "value", "others", "problem"),
    [
        ("base_url", "http://fax.example.com", {"FAXWS_PIN": "PIN-77"},
         "plain http to fax.example.com would expose the credentials; use https (or pass "
         "--insecure-http)"),
        ("user_id", "a\x01", {"FAXWS_PIN": "PIN-77"}, "contains U+0001, which XML cannot carry"),
        ("pin", "12\n34", {}, "contains a line break (U+000A)"),
        ("token", "ab c", {}, "contains U+0020; only visible ASCII is allowed in a header"),
        ("token_url", "ftp://auth.example/t", _CLIENT, "must be an http(s) URL with a host"),
    ],
    ids=["base-url", "user-id", "pin", "token", "token-url"],
)  # fmt: skip
@pytest.mark.parametrize("given_as", ["variable", "flag"])
def test_a_bad_setting_is_named_as_it_was_given(
    key: str, value: str, others: dict[str, str], problem: str, given_as: str
) -> None:
    """A value from FAXWS_BASE_URL is not called --base-url, a flag the user never typed."""
    variable, flag = f"FAXWS_{key.upper()}", "--" + key.replace("_", "-")
    env = {"FAXWS_BASE_URL": "http://127.0.0.1:9", "FAXWS_USER_ID": "u", **others}
    args = ["report", "J1", "--json"]
    if given_as == "variable":
        env[variable] = value
    else:  # the other credentials too: a credential flag means the variables' are not used
        args += [flag, value]
        for other in ("FAXWS_CLIENT_ID", "FAXWS_CLIENT_SECRET"):
            if other in env:
                args += ["--" + other[6:].lower().replace("_", "-"), env.pop(other)]
    done = faxws(*args, env=env)
    assert done.returncode == 2, done.stderr
    name = variable if given_as == "variable" else flag
    error = json_error(done)
    assert (error["field"], error["message"]) == (name, f"{name}: {problem}")
    assert done.stderr.startswith(f"faxws report: BadInputError: {name}: {problem}")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["send", "--to", "1", "x.pdf", "--pin", "-Zq9abc"],
         "argument --pin: expected one argument; a value that starts with - is given as "
         "--pin=VALUE"),
        (["send", "--to", "-Zq9", "x.pdf"],
         "argument --to: expected one argument; a value that starts with - is given as "
         "--to=VALUE"),
        (["report", "J1", "--address", "-Zq9ops"],
         "argument --address: expected one argument; a value that starts with - is given as "
         "--address=VALUE"),
        (["send", "--to", "1", "-Zq9scan.pdf"],
         "the following arguments are required: FILE; a FILE whose name starts with - is "
         "given after --"),
        (["send", "--to", "1", "x.pdf", "--pin", "--json"],
         "argument --pin: expected one argument"),
        (["send", "--to", "1"], "the following arguments are required: FILE"),
    ],
    ids=["secret", "number", "address", "file", "a-known-flag", "no-file"],
)  # fmt: skip
def test_a_value_that_looks_like_an_option_is_told_how_to_give_it(
    args: list[str], message: str
) -> None:
    done = faxws(*args)
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1] == f"faxws {args[0]}: error: {message}"
    assert "Zq9" not in done.stderr  # the value is never shown
