"""Elements crowded with attributes and namespace declarations. XML counts a declaration as an
attribute, and so does every reader that bounds them: the two count together against
``MAX_ATTRIBUTES``. One table of cases for each of those readers."""

from __future__ import annotations

from faxws._protocol.request_reader import MAX_ATTRIBUTES

SOAP = "http://schemas.xmlsoap.org/soap/envelope/"

#: (name, attributes, namespace declarations) on one element: each over the bound.
REFUSED = [
    ("attributes", MAX_ATTRIBUTES + 1, 0),
    ("namespace declarations", 0, MAX_ATTRIBUTES + 1),
    ("both", MAX_ATTRIBUTES // 2, MAX_ATTRIBUTES // 2 + 1),
    # lxml's tree builder, or a schema validation, would take about a second on these.
    ("thousands of declarations", 0, 20_000),
]
#: Each exactly at the bound.
ALLOWED = [
    ("attributes", MAX_ATTRIBUTES, 0),
    ("namespace declarations", 0, MAX_ATTRIBUTES),
    ("both", MAX_ATTRIBUTES // 2, MAX_ATTRIBUTES // 2),
]
IDS = {"refused": [c[0] for c in REFUSED], "allowed": [c[0] for c in ALLOWED]}
REASON = f"more than {MAX_ATTRIBUTES} attributes (namespace declarations included)"


def crowd(attributes: int, declarations: int) -> str:
    """That many attributes and namespace declarations, as they go in a start tag."""
    return " ".join(
        [f'a{i}="v"' for i in range(attributes)]
        + [f'xmlns:p{i}="urn:p{i}"' for i in range(declarations)]
    )


def envelope(payload: str, attributes: int, declarations: int, on: str = "Body") -> bytes:
    """A SOAP 1.1 envelope holding ``payload``, its Envelope or Body crowded: read by every
    reader, and ancestors of the payload, whose declarations a validation of it copies. (The
    Envelope declares soap too: crowded, it holds one more.)"""
    crowded = {"Envelope": "", "Body": ""}
    crowded[on] = " " + crowd(attributes, declarations)
    return (
        f'<?xml version="1.0" encoding="utf-8"?>\n'
        f'<soap:Envelope xmlns:soap="{SOAP}"{crowded["Envelope"]}>'
        f"<soap:Header/><soap:Body{crowded['Body']}>{payload}</soap:Body></soap:Envelope>"
    ).encode()
