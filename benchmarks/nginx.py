"""The CPU-bound workload: the fake docs sites as static, pre-gzipped files behind Debian's nginx.

The pages are the fake docs host's own (``tests.support.fakes.docs.DocsFake``: same renderer, same
links, robots.txt, mirrors, PDF and PNG), written once to disk with a ``.gz`` twin each, and
served by an nginx the benchmark starts with its own config (``gzip_static on``, no access log,
one worker process so the crawlers keep the other core, at ``SERVER_NICE`` when run as root:
see ``benchmarks.common.CONTENDER_NICE``). Nothing is computed per request, so
the crawler's own CPU is what limits pages/s.
"""

from __future__ import annotations

import gzip
import os
import shutil
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

from benchmarks.common import SERVER_NICE, free_port

HOST = "127.0.0.4"  # the fakes use .1–.3
STARTUP_TIMEOUT_S = 10.0

NGINX_CONF = """\
daemon off;
master_process on;
worker_processes 1;
{priority}
pid {root}/nginx.pid;
error_log {root}/error.log warn;
{user}
events {{ worker_connections 4096; }}
http {{
    types {{ text/html html; text/plain txt; application/pdf pdf; image/png png; }}
    default_type application/octet-stream;
    charset utf-8;
    charset_types text/html text/plain;
    access_log off;
    sendfile on;
    tcp_nopush on;
    tcp_nodelay on;
    keepalive_timeout 65;
    keepalive_requests 100000;
    gzip_static on;
    gzip_vary on;
    client_body_temp_path {root}/tmp/body;
    proxy_temp_path {root}/tmp/proxy;
    fastcgi_temp_path {root}/tmp/fastcgi;
    uwsgi_temp_path {root}/tmp/uwsgi;
    scgi_temp_path {root}/tmp/scgi;
    server {{
        listen {host}:{port} backlog=4096;
        root {root}/www;
        index index.html;
        location / {{ try_files $uri $uri/ =404; }}
    }}
}}
"""


NGINX_ENV = "HUBCOLLECT_BENCH_NGINX"
"""Path of the nginx binary to use; set it to a path that does not exist to skip the workload."""


def nginx_binary() -> str | None:
    if NGINX_ENV in os.environ:
        chosen = os.environ[NGINX_ENV]
        return chosen if chosen and os.access(chosen, os.X_OK) else None
    found = shutil.which("nginx")
    if found:
        return found
    return "/usr/sbin/nginx" if os.access("/usr/sbin/nginx", os.X_OK) else None


def write_sites(www: Path, base_url: str, sites: int, pages: int, page_kb: float) -> int:
    """Render every fake docs page to ``www`` (plus ``.gz`` twins); returns the file count."""
    from tests.support.fakes.docs import DocsFake, parse_args

    # The fake's own defaults; it renders pages here and never serves (no port is written).
    fake = DocsFake(parse_args(["--port-file", os.devnull, "--sites", str(sites),
                                "--pages", str(pages), "--page-kb", str(page_kb)]))
    fake.bound({"url": base_url})  # absolute links point at nginx
    paths = ["/robots.txt", "/outside.html"]
    for k in range(sites):
        paths += [f"/site{k}/index.html", f"/site{k}/flaky.html",
                  f"/site{k}/private/secret.html", f"/site{k}/files/manual.pdf",
                  f"/site{k}/img/diagram.png"]
        paths += [f"/site{k}/page{i}.html" for i in range(pages)]
    count = 0
    for url_path in paths:
        payload = fake._static.get(url_path) or fake._resolve(url_path)
        if payload is None:
            raise RuntimeError(f"the docs fake has no {url_path}")
        target = www / url_path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(payload.body)
        count += 1
        if payload.compressible:
            target.with_name(target.name + ".gz").write_bytes(
                gzip.compress(payload.body, compresslevel=6, mtime=0))
    return count


class Nginx:
    """An nginx serving ``root/www`` on ``HOST``; a context manager that stops it."""

    def __init__(self, root: Path, sites: int, pages: int, page_kb: float) -> None:
        binary = nginx_binary()
        if binary is None:
            raise FileNotFoundError("nginx is not installed (apt-get install nginx-light, or "
                                    f"point ${NGINX_ENV} at it)")
        self.binary = binary
        self.root = root
        self.port = free_port(HOST)
        self.url = f"http://{HOST}:{self.port}"
        self.process: subprocess.Popen[bytes] | None = None
        root.mkdir(parents=True, exist_ok=True)
        for sub in ("body", "proxy", "fastcgi", "uwsgi", "scgi"):
            (root / "tmp" / sub).mkdir(parents=True, exist_ok=True)
        self.files = write_sites(root / "www", self.url, sites, pages, page_kb)
        # nginx's workers drop root privileges: let them read the tree.
        for directory in [root, *[p for p in root.rglob("*") if p.is_dir()]]:
            directory.chmod(0o755)
        root_user = os.geteuid() == 0
        # As root, the worker drops to root (to read this tree) and runs ahead of the crawlers.
        self.boosted = root_user
        self.conf = root / "nginx.conf"
        self.conf.write_text(NGINX_CONF.format(
            root=root, host=HOST, port=self.port, user="user root root;" if root_user else "",
            priority=f"worker_priority {SERVER_NICE};" if root_user else ""))

    def __enter__(self) -> Nginx:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        log = open(self.root / "stderr.log", "wb")  # noqa: SIM115 - closed right after Popen
        with log:
            self.process = subprocess.Popen(
                [self.binary, "-p", str(self.root), "-c", str(self.conf),
                 "-e", str(self.root / "error.log")],
                stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while True:
            try:
                with opener.open(f"{self.url}/robots.txt", timeout=1) as response:
                    if response.status == 200:
                        return
            except OSError:
                pass
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                detail = (self.root / "stderr.log").read_text(errors="replace")[-500:]
                raise RuntimeError(f"nginx did not start: {detail.strip()}")
            time.sleep(0.05)

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
