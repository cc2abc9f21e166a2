"""A scripted OpenAI-compatible chat-completions server for the LLM frontend tests.

Contract: `ScriptedServer` serves ``POST <base>/chat/completions`` on 127.0.0.1
(an ephemeral port) from a background thread. Each request pops the next
`ScriptedResponse` (status, body, headers, delay, drip) and its JSON body is
recorded in ``requests``; an unscripted request gets HTTP 500 so that a test fails loudly.
Real HTTP end to end: the tests drive it through the real `openai` client.
"""

from __future__ import annotations

import json
import socket
import threading
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = [
    "ScriptedResponse",
    "ScriptedServer",
    "chat_reply",
    "closed_port_url",
    "error_reply",
]


@dataclass(frozen=True)
class ScriptedResponse:
    """One canned HTTP response; ``delay_s`` is waited before answering.

    With ``drip_s``, the body is sent ``drip_bytes`` at a time, ``drip_s`` apart
    (a slow-drip server); the headers go out at once.
    """

    status: int = 200
    body: bytes = b"{}"
    headers: tuple[tuple[str, str], ...] = ()
    delay_s: float = 0.0
    drip_s: float = 0.0
    drip_bytes: int = 1


def chat_reply(
    content: str, *, prompt_tokens: int = 100, completion_tokens: int = 50, finish: str = "stop"
) -> ScriptedResponse:
    """A 200 chat completion whose message content is ``content``."""
    body = {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 0,
        "model": "scripted",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": finish,
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }
    return ScriptedResponse(200, json.dumps(body).encode())


def error_reply(
    status: int, message: str, *, headers: tuple[tuple[str, str], ...] = ()
) -> ScriptedResponse:
    """An OpenAI-style error body with the given status."""
    body = {"error": {"message": message, "type": "test_error", "code": None}}
    return ScriptedResponse(status, json.dumps(body).encode(), headers)


@dataclass
class ScriptedServer:
    """The server; use as a context manager (the pytest fixture does)."""

    responses: deque[ScriptedResponse] = field(default_factory=deque)
    requests: list[dict[str, Any]] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _httpd: ThreadingHTTPServer | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def base_url(self) -> str:
        """The ``base_url`` to configure (``http://127.0.0.1:<port>/v1``)."""
        assert self._httpd is not None
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def push(self, *responses: ScriptedResponse) -> None:
        """Queue responses, answered in order."""
        with self._lock:
            self.responses.extend(responses)

    def _next(self, body: dict[str, Any]) -> ScriptedResponse:
        with self._lock:
            self.requests.append(body)
            if self.responses:
                return self.responses.popleft()
        return error_reply(500, "no scripted response left")

    def __enter__(self) -> ScriptedServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = {"_raw": raw.decode("utf-8", "replace")}
                body["_path"] = self.path
                body["_authorization"] = self.headers.get("Authorization", "")
                reply = server._next(body)
                if reply.delay_s and server._stop.wait(reply.delay_s):
                    return
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(reply.body)))
                    for name, value in reply.headers:
                        self.send_header(name, value)
                    self.end_headers()
                    if not reply.drip_s:
                        self.wfile.write(reply.body)
                        return
                    for i in range(0, len(reply.body), reply.drip_bytes):
                        self.wfile.write(reply.body[i : i + reply.drip_bytes])
                        self.wfile.flush()
                        if server._stop.wait(reply.drip_s):
                            return
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout tests)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        ).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        assert self._httpd is not None
        self._httpd.shutdown()
        self._httpd.server_close()


def closed_port_url() -> str:
    """A URL on 127.0.0.1 where nothing listens (connections are refused)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"
