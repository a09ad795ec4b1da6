"""Fixtures shared by several test packages."""

import importlib.util
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest


class ChatServer:
    """A real HTTP server on localhost with the OpenAI chat completions API: ``reply(request)``
    (the decoded JSON body) gives the assistant's text; every request and its headers are kept."""

    def __init__(self):
        self.reply = lambda request: "yes"
        self.status = 200
        self.requests, self.headers = [], []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append(body)
                server.headers.append(dict(self.headers))
                if self.path != "/v1/chat/completions" or server.status != 200:
                    self.send_response(404 if server.status == 200 else server.status)
                    self.end_headers()
                    self.wfile.write(b"not served here")
                    return
                answer = {"choices": [{"message": {"role": "assistant", "content": server.reply(body)}}]}
                data = json.dumps(answer).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True).start()


@pytest.fixture
def chat_server():
    server = ChatServer()
    yield server
    server.httpd.shutdown()
    server.httpd.server_close()


def _runs_snakemake(item) -> bool:
    return item.get_closest_marker("workflow") is not None or item.get_closest_marker("slurm") is not None


def pytest_collection_modifyitems(config, items):
    """The modules that run Snakemake first, the largest (the last collected) first among them:
    `--dist loadfile` hands modules to the two workers in collection order, so the short unit-test
    modules then fill the end and neither worker idles while the other finishes a long module."""
    module = {}
    for i, item in enumerate(items):
        module.setdefault(item.path, i)

    def order(item):
        slow = _runs_snakemake(item)
        return not slow, -module[item.path] if slow else 0  # stable: a module's tests keep their order

    items.sort(key=order)
    if importlib.util.find_spec("torchvision") is None:
        skip = pytest.mark.skip(reason="needs torchvision: these run in .venv-perception/, which "
                                       "`./run.sh perception-env` creates (./run.sh test then runs them there)")
        for item in items:
            if item.get_closest_marker("torchvision"):
                item.add_marker(skip)
