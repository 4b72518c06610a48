"""The REST API described for tools: an OpenAPI 3.1 document, served at
``/api/openapi.json``. Written out here, apart from the routes that serve the API, so that
the tests can hold each to the other: every route served is described, every route described
is served, and every answer matches its schema."""

from __future__ import annotations

import copy
import functools
from typing import Any

from faxws._protocol.xsd import INT_MAX, INT_MIN
from faxws._version import __version__
from faxws.testing._faults import KINDS, MAX_SECONDS
from faxws.testing._life import OUTCOMES
from faxws.testing._pages import MAX_PAGES

__all__ = ["document"]

_MAX_LIMIT = 100_000
_MAX_WAIT = 300

Schema = dict[str, Any]


def _ref(name: str) -> Schema:
    return {"$ref": f"#/components/schemas/{name}"}


def _nullable(kind: str, **more: Any) -> Schema:
    return {"type": [kind, "null"], **more}


_DATE = {"type": "string", "format": "date-time"}
_NULLABLE_DATE = _nullable("string", format="date-time")
_STRING = {"type": "string"}
_INT = {"type": "integer"}
_STRINGS = {"type": "array", "items": _STRING}


def _object(properties: dict[str, Schema], description: str = "") -> Schema:
    schema: Schema = {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }
    if description:
        schema["description"] = description
    return schema


_SCHEMAS: dict[str, Schema] = {
    "Error": _object({"error": _STRING}, "What is wrong, in words."),
    "Push": _object(
        {
            "state": {"enum": ["pending", "delivered", "failed", "skipped"]},
            "attempts": _INT,
            "result": {"type": "string", "description": "The last attempt's outcome, or why"},
            "at": _NULLABLE_DATE,
            "next_at": _NULLABLE_DATE,
        },
        "A recipient's completion push (NotifyType 3, an http(s) NotifyDestination).",
    ),
    "Recipient": _object(
        {
            "fax_number": _STRING,
            "company": _STRING,
            "title": _STRING,
            "name": _STRING,
            "secure_csid": _STRING,
            "job_id": _STRING,
            "status": {"enum": [1, 2, 3], "description": "1 delivered, 2 failed, 3 in progress"},
            "description": _STRING,
            "recipient_state": _INT,
            "pages_sent": _INT,
            "pages_total": _INT,
            "attempts": _INT,
            "outcome": {"enum": list(OUTCOMES)},
            "outcome_pages": _nullable("integer"),
            "ended_at": _NULLABLE_DATE,
            "delivery_date_time": _STRING,
            "duration": _INT,
            "remote_csid": _STRING,
            "cancelled_at": _NULLABLE_DATE,
            "push": {"oneOf": [_ref("Push"), {"type": "null"}]},
        },
        "A recipient as received, with where its job is now.",
    ),
    "File": _object(
        {
            "index": _INT,
            "file_type": {"type": "integer", "description": "FileTypeId (101: PDF, 1: TIFF G3)"},
            "size": _INT,
            "sha256": _STRING,
        }
    ),
    "Job": _object(
        {
            "id": {"type": "string", "description": "The simulator's number for the job"},
            "job_ids": _STRINGS,
            "user_id": _STRING,
            "auth_mode": {"enum": ["pin", "oauth2"]},
            "request_id": _nullable("string"),
            "received_at": _DATE,
            "operation": {"enum": ["SendFax", "SendFaxEx"]},
            "reference_id": _STRING,
            "pages": _INT,
            "scheduled_start": _DATE,
            "expires_at": _DATE,
            "details": {
                "type": ["object", "null"],
                "description": "SendFaxEx's JobDetails (snake_case names), passwords masked",
            },
            "recipients": {"type": "array", "items": _ref("Recipient")},
            "files": {"type": "array", "items": _ref("File")},
            "deviations": _STRINGS,
        },
        "A SendFax or SendFaxEx the simulator accepted.",
    ),
    "JobList": _object(
        {
            "total": {"type": "integer", "description": "Jobs kept (with q: jobs found)"},
            "jobs": {"type": "array", "items": _ref("Job")},
        }
    ),
    "Moment": _object(
        {
            "at": _DATE,
            "kind": {
                "enum": [
                    "queued",
                    "dialing",
                    "sending",
                    "ringing",
                    "busy",
                    "no-answer",
                    "rejected",
                    "dropped",
                    "delivered",
                    "failed",
                    "cancelled",
                    "expired",
                    "planned",
                    "push",
                ]
            },
            "text": _STRING,
            "done": {"type": "boolean", "description": "false: still to come"},
        }
    ),
    "Timeline": _object(
        {
            "id": _STRING,
            "recipients": {
                "type": "array",
                "items": _object(
                    {
                        "job_id": _STRING,
                        "fax_number": _STRING,
                        "moments": {"type": "array", "items": _ref("Moment")},
                    }
                ),
            },
        }
    ),
    "Request": _object(
        {
            "id": {"type": "integer", "description": "The request's number (never reused)"},
            "method": _STRING,
            "path": _STRING,
            "operation": _nullable("string"),
            "request_id": _nullable("string"),
            "received_at": _DATE,
            "status": _nullable("integer", description="null: no answer (the connection closed)"),
            "refusal": _nullable("string"),
            "fault": _nullable("string", description="The injected fault applied, if any"),
            "deviations": _STRINGS,
            "headers": {"type": "object", "additionalProperties": _STRING},
            "body_size": _INT,
            "body": _nullable("string", description="Secrets masked; null: not kept"),
            "body_truncated": {"type": "boolean"},
        },
        "A request to the service's port (not the inbox's or the API's), secrets masked.",
    ),
    "RequestList": _object(
        {"total": _INT, "requests": {"type": "array", "items": _ref("Request")}}
    ),
    "Fault": {
        "type": "object",
        "description": (
            "A fault by kind, with its own fields: delay_response and slow_drip take seconds,"
            " http_status takes status, soap_fault takes code (a string) and text, ws_error"
            " takes code (an integer) and text"
        ),
        "properties": {
            "fault": {"enum": sorted(KINDS)},
            "operation": _nullable("string", description="Only requests of this operation"),
            "times": {"type": "integer", "minimum": 1},
            "seconds": {"type": "number", "exclusiveMinimum": 0, "maximum": MAX_SECONDS},
            "status": {"type": "integer", "minimum": 200, "maximum": 599},
            "code": {
                "oneOf": [
                    {"type": "string"},
                    {"type": "integer", "minimum": INT_MIN, "maximum": INT_MAX},
                ]
            },
            "text": _STRING,
        },
        "required": ["fault"],
        "additionalProperties": False,
    },
    "FaultAdded": _object(
        {"fault": {"enum": sorted(KINDS)}, "operation": _nullable("string"), "times": _INT}
    ),
    "Faults": _object({"faults": {"type": "array", "items": _ref("Fault")}}),
    "Outcome": {
        "type": "object",
        "properties": {
            "outcome": {"enum": list(OUTCOMES)},
            "pages": {
                "type": "integer",
                "minimum": 0,
                "maximum": MAX_PAGES,
                "description": "For fails-after-pages: the pages that go through (default 1)",
            },
        },
        "required": ["outcome"],
        "additionalProperties": False,
    },
    "JobsCleared": _object({"cleared": {"const": True}, "jobs": _INT}),
    "RequestsCleared": _object({"cleared": {"const": True}, "requests": _INT}),
    "FaultsCleared": _object({"cleared": {"const": True}, "faults": _INT}),
    "Reset": _object({"cleared": {"const": True}, "jobs": _INT, "requests": _INT, "faults": _INT}),
    "JobDeleted": _object({"deleted": {"const": True}, "id": _STRING, "job_ids": _STRINGS}),
}


def _json(schema: str, description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": _ref(schema)}}}


def _error(description: str) -> dict[str, Any]:
    return _json("Error", description)


def _query(name: str, schema: Schema, description: str) -> dict[str, Any]:
    return {
        "name": name,
        "in": "query",
        "required": False,
        "schema": schema,
        "description": description,
    }


def _path(name: str, description: str) -> dict[str, Any]:
    return {
        "name": name,
        "in": "path",
        "required": True,
        "schema": _STRING,
        "description": description,
    }


_JOB_ID = _path("id", "The job's number (1, 2, ...) or one of its job ids (SIM00000001)")
_FILE_INDEX = _path("index", "The document's FileIndex")
_LIMIT = _query(
    "limit",
    {"type": "integer", "minimum": 1, "maximum": _MAX_LIMIT, "default": 100},
    "How many, newest first",
)
_CHANGE = {
    "403": _error(
        "Refused: no JSON body and no X-FaxWS-Client header, or sent by a page of another site"
    )
}
_ANOTHER_SITE = _error(
    "Refused: sent by a page of another site (its Origin, or Sec-Fetch-Site same-site or"
    " cross-site, unless a link followed to a page)"
)
_NO_JOB = {"404": _error("No such job")}
_BAD_QUERY = _error("A query parameter the operation does not take (named), or a bad value")
_ANY_ERROR = {
    "description": (
        "Another error: 405 with Allow for a method not described, 413 for a body too large,"
        " 500 when the simulator fails (saying how) (JSON); 401 for a missing API token, 403"
        " for another host name, 400 or 411 for a body whose length is not plain (plain text)"
    ),
    "content": {"application/json": {"schema": _ref("Error")}, "text/plain": {"schema": _STRING}},
}


def _operation(
    summary: str,
    responses: dict[str, Any],
    *,
    parameters: tuple[dict[str, Any], ...] = (),
    body: str | None = None,
    body_required: bool = True,
    description: str = "",
) -> dict[str, Any]:
    operation: dict[str, Any] = {
        "summary": summary,
        "responses": {"400": _BAD_QUERY, "403": _ANOTHER_SITE, **responses, "default": _ANY_ERROR},
    }
    if description:
        operation["description"] = description
    if parameters:
        operation["parameters"] = list(parameters)
    if body is not None:
        operation["requestBody"] = {
            "required": body_required,
            "content": {"application/json": {"schema": _ref(body)}},
        }
    return operation


def _clearing(summary: str, schema: str, description: str) -> dict[str, Any]:
    return _operation(
        summary,
        {"200": _json(schema, "Cleared, with how many there were"), **_CHANGE},
        description=description
        + " Send `X-FaxWS-Client: <anything>` (or a JSON body) with it: a page of another site"
        " cannot.",
    )


_PATHS: dict[str, dict[str, Any]] = {
    "/api/jobs": {
        "get": _operation(
            "The jobs received, newest first",
            {"200": _json("JobList", "The jobs")},
            parameters=(
                _query(
                    "min",
                    {"type": "integer", "minimum": 0, "maximum": _MAX_LIMIT, "default": 0},
                    "Wait until at least this many jobs are kept (or `timeout` passes)",
                ),
                _query(
                    "timeout",
                    {"type": "number", "minimum": 0, "maximum": _MAX_WAIT, "default": 0},
                    "Seconds to wait for `min` jobs",
                ),
                _LIMIT,
                _query(
                    "q",
                    {"type": "string", "maxLength": 200},
                    "Only jobs whose number, job id, reference, request id, or a recipient's"
                    " fax number (or its digits), name, company or title holds this text",
                ),
            ),
        ),
        "delete": _clearing(
            "Forget every job",
            "JobsCleared",
            "Forgets every job and its documents; job ids are given out again from"
            " SIM00000001. Requests and pending faults stay (see /api/reset).",
        ),
    },
    "/api/jobs/{id}": {
        "parameters": [_JOB_ID],
        "get": _operation("One job", {"200": _json("Job", "The job"), **_NO_JOB}),
        "delete": _operation(
            "Forget one job",
            {"200": _json("JobDeleted", "Forgotten"), **_NO_JOB, **_CHANGE},
            description="Forgets the job and its documents: its job ids are unknown from then"
            " on, to the API and to every operation.",
        ),
    },
    "/api/jobs/{id}/timeline": {
        "parameters": [_JOB_ID],
        "get": _operation(
            "Each recipient's life, moment by moment (the moments to come too)",
            {"200": _json("Timeline", "The timeline"), **_NO_JOB},
        ),
    },
    "/api/jobs/{id}/request": {
        "parameters": [_JOB_ID],
        "get": _operation(
            "The request that sent the job, secrets masked",
            {
                "200": _json("Request", "The request"),
                "404": _error("No such job, or its request is no longer kept"),
            },
        ),
    },
    "/api/jobs/{id}/outcome": {
        "parameters": [_JOB_ID],
        "put": _operation(
            "Plan what happens to a job id, or to every recipient of a job",
            {
                "200": _json("Job", "The job, with its new plan"),
                "400": _error("Not an outcome, or a query parameter it does not take"),
                **_NO_JOB,
                "409": _error("The job has ended"),
                **_CHANGE,
            },
            body="Outcome",
        ),
    },
    "/api/jobs/{id}/files/{index}": {
        "parameters": [_JOB_ID, _FILE_INDEX],
        "get": _operation(
            "A document, byte for byte",
            {
                "200": {
                    "description": "The document, with the media type its first bytes tell",
                    "content": {"*/*": {"schema": {"type": "string", "format": "binary"}}},
                },
                "404": _error("No such job or file"),
            },
            parameters=(
                _query("download", {"enum": ["0", "1"], "default": "0"}, "1: as an attachment"),
            ),
        ),
    },
    "/api/jobs/{id}/files/{index}/preview": {
        "parameters": [_JOB_ID, _FILE_INDEX],
        "get": _operation(
            "A page of a TIFF document as PNG",
            {
                "200": {
                    "description": "The page",
                    "content": {"image/png": {"schema": {"type": "string", "format": "binary"}}},
                },
                "404": _error("No such job, file or page, or the document is no TIFF"),
                "413": _error("The page is too large to draw"),
                "422": _error("The TIFF cannot be read"),
                "501": _error("Pillow is not installed: pip install 'faxws[preview]'"),
            },
            parameters=(
                _query(
                    "page",
                    {"type": "integer", "minimum": 1, "maximum": MAX_PAGES, "default": 1},
                    "The page, from 1",
                ),
            ),
        ),
    },
    "/api/requests": {
        "get": _operation(
            "The requests received (to the service's port), newest first, secrets masked",
            {"200": _json("RequestList", "The requests")},
            parameters=(_LIMIT,),
        ),
        "delete": _clearing(
            "Forget every request record",
            "RequestsCleared",
            "Forgets the request records (their numbers are not given out again). Jobs and"
            " pending faults stay.",
        ),
    },
    "/api/requests/{id}": {
        "parameters": [_path("id", "The request's number")],
        "get": _operation(
            "One request, secrets masked",
            {"200": _json("Request", "The request"), "404": _error("No such request kept")},
        ),
    },
    "/api/faults": {
        "get": _operation(
            "The injected faults still pending, in the order they apply",
            {"200": _json("Faults", "Each with the requests it is still for (times)")},
        ),
        "post": _operation(
            "Inject a fault for the next `times` requests (of `operation`, if given)",
            {
                "201": _json("FaultAdded", "Injected"),
                "400": _error("Not a fault, a bad field, or a query parameter it does not take"),
                **_CHANGE,
            },
            body="Fault",
        ),
        "delete": _clearing(
            "Forget the pending faults",
            "FaultsCleared",
            "Forgets every injected fault not used up yet. Jobs and requests stay.",
        ),
    },
    "/api/reset": {
        "post": _operation(
            "Forget everything: jobs, requests and pending faults",
            {"200": _json("Reset", "Cleared, with how many of each there were"), **_CHANGE},
            description="What `sim.reset()` does: jobs (job ids start again from SIM00000001),"
            " request records, pending faults and the counts of connections and token requests."
            " Send `X-FaxWS-Client: <anything>` (or a JSON body) with it.",
        ),
    },
    "/api/events": {
        "get": _operation(
            "Server-sent events: something the simulator holds changed",
            {
                "200": {
                    "description": (
                        "An endless text/event-stream: `event: change` with data"
                        ' `{"version": "..."}` at once and whenever a request, a job, a'
                        " recipient's track or a pending fault changes (changes close"
                        " together are told once); a comment line every 15 s"
                    ),
                    "content": {"text/event-stream": {"schema": _STRING}},
                },
                "503": _error("Too many event streams open (Retry-After tells when to retry)"),
            },
        ),
    },
    "/api/openapi.json": {
        "get": _operation(
            "This description",
            {
                "200": {
                    "description": "OpenAPI 3.1",
                    "content": {"application/json": {"schema": {"type": "object"}}},
                }
            },
        ),
    },
}


@functools.cache
def _built() -> dict[str, Any]:
    paths = copy.deepcopy(_PATHS)
    for item in paths.values():
        if "get" in item:
            head = copy.deepcopy(item["get"])
            head["summary"] = "The headers GET would answer with, without the body"
            for response in head["responses"].values():
                response.pop("content", None)
            item["head"] = head
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "FaxWS simulator REST API",
            "version": __version__,
            "description": (
                "The local FaxWS simulator's own API, on the service's port: what arrived,"
                " planned outcomes, injected faults. A query parameter an operation does not"
                " take is refused with 400 naming it. Beyond loopback, every call needs the"
                " API token that `faxws serve` prints."
            ),
        },
        "servers": [{"url": "/"}],
        "security": [{}, {"token_header": []}, {"token_query": []}],
        "paths": paths,
        "components": {
            "schemas": copy.deepcopy(_SCHEMAS),
            "securitySchemes": {
                "token_header": {"type": "apiKey", "in": "header", "name": "X-FaxWS-Token"},
                "token_query": {"type": "apiKey", "in": "query", "name": "token"},
            },
        },
    }


def document() -> dict[str, Any]:
    """The OpenAPI document (a copy the caller may change)."""
    return copy.deepcopy(_built())
