"""A real Prometheus server (Debian package ``prometheus``) on 127.0.0.1 with a temporary TSDB,
scraping the given targets every second; optionally behind TLS and basic auth (its web config)."""

from __future__ import annotations

import json
import shutil
import ssl
import subprocess
import urllib.request
import warnings
from dataclasses import dataclass
from pathlib import Path

from .processes import LOCALHOST, ServerProcess, free_port
from .versions import SETUP_HINT, MissingTestDependency

SCRAPE_INTERVAL_S = 1


@dataclass(frozen=True)
class WebSecurity:
    """TLS (server certificate and key, PEM) and one basic-auth user."""

    cert_pem: Path
    key_pem: Path
    ca_pem: Path
    user: str
    password: str


def _binary(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        raise MissingTestDependency(f"{name} not found (Debian package prometheus): {SETUP_HINT}")
    return found


def _bcrypt(password: str) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        import crypt  # libxcrypt's bcrypt: Prometheus' web config wants bcrypt hashes

        return crypt.crypt(password, crypt.mksalt(crypt.METHOD_BLOWFISH))


class PrometheusServer:
    """``prometheus`` scraping ``targets`` ({job: "host:port"}) every SCRAPE_INTERVAL_S."""

    def __init__(self, workdir: Path, targets: dict[str, str], security: WebSecurity | None = None):
        self.workdir = workdir
        self.storage = workdir / "tsdb"
        self.security = security
        self.port = free_port()
        scheme = "https" if security else "http"
        self.url = f"{scheme}://{LOCALHOST}:{self.port}"
        workdir.mkdir(parents=True, exist_ok=True)
        jobs = "".join(
            f"  - job_name: {job}\n    static_configs:\n      - targets: ['{target}']\n"
            for job, target in targets.items()
        )
        (workdir / "prometheus.yml").write_text(
            f"global:\n  scrape_interval: {SCRAPE_INTERVAL_S}s\n  scrape_timeout: {SCRAPE_INTERVAL_S}s\n"
            f"scrape_configs:\n{jobs}"
        )
        argv = [
            _binary("prometheus"),
            f"--config.file={workdir / 'prometheus.yml'}",
            f"--storage.tsdb.path={self.storage}",
            f"--web.listen-address={LOCALHOST}:{self.port}",
            "--log.level=warn",
        ]
        if security:
            (workdir / "web.yml").write_text(
                f"tls_server_config:\n  cert_file: {security.cert_pem}\n  key_file: {security.key_pem}\n"
                f"basic_auth_users:\n  {security.user}: '{_bcrypt(security.password)}'\n"
            )
            argv.append(f"--web.config.file={workdir / 'web.yml'}")
        self.process = ServerProcess("prometheus", argv, workdir / "prometheus.log")

    def _open(self, path: str, data: bytes | None = None):
        request = urllib.request.Request(self.url + path, data)
        context = None
        if self.security:
            import base64

            pair = f"{self.security.user}:{self.security.password}".encode()
            request.add_header("Authorization", "Basic " + base64.b64encode(pair).decode())
            context = ssl.create_default_context(cafile=str(self.security.ca_pem))
        return urllib.request.urlopen(request, timeout=10, context=context)

    def api(self, path: str, form: dict | None = None) -> dict:
        """GET (or POST ``form``) an API path; the decoded JSON answer (errors included)."""
        import urllib.error
        import urllib.parse

        data = urllib.parse.urlencode(form).encode() if form is not None else None
        try:
            with self._open(path, data) as response:
                return json.loads(response.read())
        except urllib.error.HTTPError as err:
            return json.loads(err.read())

    def start(self) -> "PrometheusServer":
        self.process.start()
        self.process.wait_until(lambda: self._open("/-/ready").status == 200, "ready")
        return self

    def wait_for_targets_up(self, count: int) -> None:
        def all_up() -> bool:
            result = self.api("/api/v1/query", {"query": "up == 1"})["data"]["result"]
            return len(result) >= count

        self.process.wait_until(all_up, f"{count} target(s) up")

    def tsdb_dump(self, min_ms: int, max_ms: int) -> str:
        """``promtool tsdb dump`` of the TSDB (head included) between two times: one sample a line."""
        result = subprocess.run(
            [_binary("promtool"), "tsdb", "dump", f"--min-time={min_ms}", f"--max-time={max_ms}", str(self.storage)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert result.returncode == 0, result.stderr
        return result.stdout

    def stop(self) -> None:
        self.process.stop()
