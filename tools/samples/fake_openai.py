"""A tiny OpenAI-compatible chat-completions server on loopback, for recording real
instrumentation output offline (tools/samples/make_*.py).

``POST /v1/chat/completions`` answers with a canned completion: a ``get_weather`` tool call
when the last message is the user's and the request offers tools, else a short text answer.
Token counts are derived from the request so that every call differs; the model name
``fail-model`` gets an HTTP 500 error body. Nothing leaves the
machine; no API key is checked.

Run on its own: ``python tools/samples/fake_openai.py 8765`` (blocks), or use ``serve()``.
"""

from __future__ import annotations

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def reply(request: dict[str, Any], n: int) -> dict[str, Any]:
    """The canned completion for one chat request (the ``n``-th the server has answered)."""
    messages = request.get("messages") or []
    last = messages[-1] if messages else {}
    prompt_tokens = 9 + sum(len(str(m.get("content") or "").split()) for m in messages)
    if request.get("tools") and last.get("role") == "user":
        city = "Paris" if "paris" in str(last.get("content", "")).lower() else "Lyon"
        message: dict[str, Any] = {
            "role": "assistant", "content": None,
            "tool_calls": [{"id": f"call_{n:03d}", "type": "function",
                            "function": {"name": "get_weather",
                                         "arguments": json.dumps({"city": city})}}]}
        finish, completion_tokens = "tool_calls", 12
    else:
        text = ("It is rainy, 14 C." if last.get("role") == "tool"
                else f"Answer {n}: {str(last.get('content', ''))[:40]}")
        message = {"role": "assistant", "content": text}
        finish, completion_tokens = "stop", len(text.split())
    return {"id": f"chatcmpl-fake-{n:03d}", "object": "chat.completion",
            "created": 1767225600 + n, "model": request.get("model", "gpt-4o-mini"),
            "system_fingerprint": "fp_fake",
            "choices": [{"index": 0, "message": message, "finish_reason": finish,
                         "logprobs": None}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens}}


class _Handler(BaseHTTPRequestHandler):
    count = 0
    lock = threading.Lock()

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self.send_error(404)
            return
        with _Handler.lock:
            _Handler.count += 1
            n = _Handler.count
        request = json.loads(body or b"{}")
        status = 200
        if request.get("model") == "fail-model":  # an upstream failure, on request
            status, answer = 500, {"error": {"message": "the fake server failed on purpose",
                                             "type": "server_error", "code": None}}
        else:
            answer = reply(request, n)
        out = json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args: Any) -> None:  # quiet
        pass


def serve(port: int = 0) -> tuple[ThreadingHTTPServer, str]:
    """Start the server on 127.0.0.1 in a daemon thread; returns it and its base URL."""
    srv = ThreadingHTTPServer(("127.0.0.1", port), _Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv, f"http://127.0.0.1:{srv.server_address[1]}/v1"


if __name__ == "__main__":
    srv = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1]) if len(sys.argv) > 1 else 8765),
                              _Handler)
    srv.serve_forever()
