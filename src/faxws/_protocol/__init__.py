"""The FaxWS protocol without I/O: the SOAP envelope and headers (:mod:`.soap`), the request
writer (:mod:`.writer`), the answer reader (:mod:`.reader`), document sources
(:mod:`.content`), the simulator's streaming request reader (:mod:`.request_reader`), the
hardened parser (:mod:`.safexml`), argument checks (:mod:`.checks`), redaction of secrets
(:mod:`.redact`) and the bindings' metadata (:mod:`.xsd`)."""
