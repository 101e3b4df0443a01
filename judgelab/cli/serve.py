"""``judgelab serve`` and ``judgelab demo``: the rater app.

Links always name the server that answers them: the base URL is ``--base-url`` (or
``$JUDGELAB_BASE_URL``; behind a reverse proxy, its ``https://`` address), else the address
and the port actually bound. ``serve`` records it in the project, so ``judgelab raters add``
and the app's Raters page make links for it, and says so when links made earlier point at
another address. Streamlit's own start-up banner is turned off: it shows the bare address,
which without a token only says "Access denied".
"""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import sys
import tempfile
import tomllib
import urllib.parse
from pathlib import Path
from typing import Any

import click

from judgelab.admin._common import BASE_URL_SETTING
from judgelab.admin._signin import AUTH_ENV, Provider, admin_list, auth_section, provider_settings, redirect_uri
from judgelab.cli._util import db_option, echo_json, json_option, new_db_option
from judgelab.labeler.errors import InputError
from judgelab.labeler.store import (
    DEFAULT_POOL_SIZE,
    POOL_SIZE_ENV,
    MaintenanceRole,
    Store,
    is_postgres,
    pool_settings,
    release_all,
    resolve_db_path,
)

APP = Path(__file__).resolve().parent.parent / "app.py"
#: The app's Streamlit settings, shipped in the package beside the app: Streamlit reads it there
#: itself (the script-level config), and :func:`streamlit_command` passes each as a flag too,
#: so no ``config.toml`` or ``STREAMLIT_*`` variable where the admin runs it can override them.
APP_CONFIG = APP.parent / ".streamlit" / "config.toml"

#: The port the app is served on unless ``--port`` says otherwise (the next free one above it
#: when it is busy).
DEFAULT_PORT = 8501
_WILDCARDS = frozenset({"0.0.0.0", "::", ""})


def app_settings() -> dict[str, Any]:
    """The packaged Streamlit settings as ``{"section.option": value}`` (e.g. ``client.showErrorDetails``)."""
    with APP_CONFIG.open("rb") as f:
        config = tomllib.load(f)
    return {f"{section}.{key}": value for section, options in config.items() for key, value in options.items()}


def _flag(value: Any) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def streamlit_command(db: Path | str, port: int, address: str) -> list[str]:
    """The ``streamlit run`` command line that serves the app on ``db``.

    Every setting of the packaged config (:data:`APP_CONFIG`) is a flag: ``streamlit run``
    also reads ``.streamlit/config.toml`` from the working directory and ``STREAMLIT_*``
    variables, which flags outrank. Among them: raters never see exception details
    (``client.showErrorDetails none``: a traceback would show server paths and offer to send
    it to outside sites), and Streamlit prints no URL of its own (``logger.hideWelcomeMessage``).

    Streamlit runs through :mod:`judgelab.cli._streamlit`, which keeps the script's path on the
    server: Streamlit would send it to every browser, naming the server's install to anyone who
    opens the address.
    """
    settings = {**app_settings(), "server.port": port, "server.address": address}
    command = [sys.executable, "-m", "judgelab.cli._streamlit", "run", str(APP)]
    for key, value in settings.items():
        command += [f"--{key}", _flag(value)]
    return command


def port_is_free(address: str, port: int) -> bool:
    """Whether nothing listens on ``address:port`` (binding it now succeeds)."""
    try:
        infos = socket.getaddrinfo(address, port, type=socket.SOCK_STREAM)
    except OSError:
        infos = [(socket.AF_INET, socket.SOCK_STREAM, 0, "", ("127.0.0.1", port))]
    for family, kind, proto, _, where in infos:
        with socket.socket(family, kind, proto) as s:
            try:
                s.bind(where)
            except OSError:
                return False
    return True


def choose_port(address: str, port: int | None) -> int:
    """The port to serve on: ``port`` when given (refused if busy), else the first free from 8501.

    Raises:
        InputError: The given ``port`` is busy, or no port from 8501 to 8600 is free.
    """
    if port is not None:
        if not port_is_free(address, port):
            raise InputError(
                f"port {port} on {address} is already in use (is another judgelab app running?)",
                fix="stop that server, pass another --port, or leave --port out to use a free one.",
            )
        return port
    for candidate in range(DEFAULT_PORT, DEFAULT_PORT + 100):
        if port_is_free(address, candidate):
            return candidate
    raise InputError(f"no free port from {DEFAULT_PORT} to {DEFAULT_PORT + 99}", fix="pass --port.")


def serving_url(address: str, port: int, base_url: str | None = None) -> str:
    """The base URL raters open: ``base_url`` when given (checked), else ``http://ADDRESS:PORT``.

    A server listening on every interface (``0.0.0.0``, ``::``) is named by this machine's
    host name, since ``http://0.0.0.0`` leads nowhere from another machine.

    >>> serving_url("localhost", 8502)
    'http://localhost:8502'
    >>> serving_url("127.0.0.1", 8501, "https://labels.example.org/")
    'https://labels.example.org'

    Raises:
        InputError: ``base_url`` is not an ``http(s)://host[:port]`` URL. A path is refused
            too: the app is served at the root of a host name (a reverse proxy's sub-path would
            need Streamlit's ``server.baseUrlPath``, which ``serve`` does not set).
    """
    if base_url:
        parts = urllib.parse.urlsplit(base_url.strip())
        if parts.scheme not in ("http", "https") or not parts.netloc or parts.query or parts.fragment:
            raise InputError(
                f"--base-url {base_url!r} is not an http(s) address",
                fix="give the address raters open, e.g. --base-url https://labels.example.org "
                    "(or set JUDGELAB_BASE_URL).",
            )
        if parts.path.strip("/"):
            raise InputError(
                f"--base-url {base_url!r} has a path ({parts.path}); the app is served at the root of a host name",
                fix="give the proxy its own host name (e.g. https://labels.example.org) and proxy all of it to "
                    "judgelab.",
            )
        return base_url.strip().rstrip("/")
    host = socket.getfqdn() if address in _WILDCARDS else address
    if ":" in host:  # an IPv6 literal
        host = f"[{host}]"
    return f"http://{host}:{port}"


def _serve(db: Path | str, port: int, address: str, base: str, pool_size: int | None = None,
           sign_in: dict[str, Any] | None = None) -> None:
    env = {**os.environ, "JUDGELAB_DB": str(db), "JUDGELAB_BASE_URL": base}
    if sign_in is not None:
        # The launcher writes it to a secrets file of its own (judgelab.cli._streamlit.use_sign_in).
        env[AUTH_ENV] = json.dumps(sign_in)
    if pool_size is not None:
        env[POOL_SIZE_ENV] = str(pool_size)
    sys.stdout.flush()
    # Become the Streamlit server rather than its parent, so a signal sent to
    # `judgelab serve` (Ctrl+C, SIGTERM from a supervisor) reaches the server itself
    # and no orphaned server keeps the port.
    command = streamlit_command(db, port, address)
    release_all()  # exec keeps open files: the server must not inherit our lock on the database
    os.execve(command[0], command, env)


def _announce(store: MaintenanceRole, address: str, port: int, base: str, *, as_json: bool = False,
              extra: dict[str, Any] | None = None) -> None:
    """Print where the app listens and the links it serves, and record ``base`` for new links.

    With ``as_json`` the same facts are one JSON document on stdout (with ``extra``, e.g. the
    demo's links), printed before the server starts, and the lines for people go to stderr.
    """
    earlier = store.setting("project", BASE_URL_SETTING)
    if not store.read_only:
        store.set_setting("project", BASE_URL_SETTING, base)
    if as_json:
        echo_json({**(extra or {}), "db": store.shown, "read_only": store.read_only, "address": address,
                   "port": port, "app": base, "rater_links": f"{base}/?t=<token>",
                   "stale_links_for": earlier if earlier and earlier != base and not store.read_only else None})
        click.echo("serving; Ctrl+C stops", err=True)
        return
    click.echo(f"serving {store.shown}" + (" (read-only)" if store.read_only else ""))
    if store.read_only:
        click.echo("  read-only: the admin pages and exports work; raters are told rating is paused, and nothing "
                   "is saved. To rate, make the file and its folder writable and serve again.")
    if is_postgres(store.location):
        size, wait = pool_settings()
        click.echo(f"  connections: up to {size} to the database at once, waiting up to {wait:g} s for one "
                   f"(--pool-size, ${POOL_SIZE_ENV}; every server's together must stay under max_connections)")
    click.echo(f"  listening on {address}:{port}")
    click.echo(f"  app:         {base}")
    click.echo(f"  rater links: {base}/?t=<token>  (`judgelab raters add NAME` prints one, "
               "as does the app's Raters page; a bare address without ?t= only says 'Access denied')")
    if earlier and earlier != base and not store.read_only:
        click.echo(f"  note: links made for {earlier} do not reach this server; send those raters new ones "
                   "(`judgelab raters reissue NAME`), or serve at that address again.")
    click.echo("  Ctrl+C stops")


def _sign_in(store: MaintenanceRole, provider: Provider | None, base: str, *, err: bool = False
             ) -> dict[str, Any] | None:
    """Streamlit's ``[auth]`` section for ``provider`` (``None``: no sign-in), with what to tell the admin.

    ``err``: the lines for the admin go to stderr (``--json`` keeps stdout for its document).
    """
    if provider is None:
        return None
    if importlib.util.find_spec("authlib") is None:
        raise InputError("signing in needs Authlib, which is not installed",
                         fix="pip install 'judgelab[sso]', or leave the --oidc-* options out.")
    admins = admin_list(store)  # type: ignore[arg-type]
    lines = [
        f"  sign-in:     {provider.server_metadata_url}",
        f"               redirect URI to register with the provider: {redirect_uri(base)}",
        f"               admin list: {len(admins.emails)} e-mail(s), {len(admins.groups)} group(s) "
        f"(claim {admins.group_claim!r}); a sign-in lasts {admins.session_seconds // 60} min",
    ]
    if not admins.emails and not admins.groups:
        lines.append("  note: nobody is on the admin list yet: `judgelab admins allow EMAIL` (or --group NAME)")
    if provider.cookie_secret_made:
        lines.append("  note: sign-ins end when this server stops (no --oidc-cookie-secret; "
                     "set JUDGELAB_OIDC_COOKIE_SECRET to keep them across restarts)")
    for line in lines:
        click.echo(line, err=err)
    return auth_section(provider, base)


def oidc_options(func: Any) -> Any:
    """The sign-in provider's options (each also read from a ``JUDGELAB_OIDC_*`` variable)."""
    options = [
        click.option("--oidc-file", type=click.Path(exists=True, dir_okay=False), envvar="JUDGELAB_OIDC_FILE",
                     default=None, help="A TOML file with the provider's settings (the keys below, at its top or "
                                        "under [auth]) [env: JUDGELAB_OIDC_FILE]."),
        click.option("--oidc-metadata-url", envvar="JUDGELAB_OIDC_METADATA_URL", default=None, metavar="URL",
                     help="The OpenID Connect provider's issuer or its /.well-known/openid-configuration; turns "
                          "sign-in on [env: JUDGELAB_OIDC_METADATA_URL]."),
        click.option("--oidc-client-id", envvar="JUDGELAB_OIDC_CLIENT_ID", default=None,
                     help="The client id the provider gave this app [env: JUDGELAB_OIDC_CLIENT_ID]."),
        click.option("--oidc-client-secret", envvar="JUDGELAB_OIDC_CLIENT_SECRET", default=None,
                     help="Its client secret; prefer the variable, which `ps` does not show "
                          "[env: JUDGELAB_OIDC_CLIENT_SECRET]."),
        click.option("--oidc-cookie-secret", envvar="JUDGELAB_OIDC_COOKIE_SECRET", default=None,
                     help="Signs the sign-in cookie; keep it to keep sign-ins across restarts [default: a random "
                          "one per start; env: JUDGELAB_OIDC_COOKIE_SECRET]."),
        click.option("--oidc-scope", envvar="JUDGELAB_OIDC_SCOPE", default=None,
                     help="Scopes to ask for [default: 'openid email profile'; add 'groups' for Okta's group "
                          "claim; env: JUDGELAB_OIDC_SCOPE]."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


_PORT_HELP = "Port to serve on [default: 8501, or the next free one when it is busy]."
_ADDRESS_HELP = ("Interface to listen on: localhost (this machine only), 0.0.0.0 (every interface), "
                 "or one address.")
_BASE_URL_HELP = ("The address raters open, used in every link (behind a reverse proxy: its https URL) "
                  "[default: $JUDGELAB_BASE_URL, else http://ADDRESS:PORT].")


@click.command()
@click.option("--port", type=int, default=None, help=_PORT_HELP)
@click.option("--address", default="localhost", show_default=True, help=_ADDRESS_HELP)
@click.option("--base-url", envvar="JUDGELAB_BASE_URL", default=None, help=_BASE_URL_HELP)
@click.option("--pool-size", type=click.IntRange(min=1), default=None, metavar="N",
              help="PostgreSQL: the most connections this server opens to the database; a page waits for one "
                   f"when all are busy [default: ${POOL_SIZE_ENV}, else {DEFAULT_POOL_SIZE}]. Keep servers x N "
                   "under the server's max_connections minus its reserved ones.")
@oidc_options
@db_option
@json_option
def serve(port: int | None, address: str, base_url: str | None, pool_size: int | None, db: str | None,
          oidc_file: str | None, oidc_metadata_url: str | None, oidc_client_id: str | None,
          oidc_client_secret: str | None, oidc_cookie_secret: str | None, oidc_scope: str | None,
          as_json: bool) -> None:
    """Start the rater app on the project database.

    With --oidc-metadata-url (and a client id and secret) admins sign in with that OpenID Connect
    provider; who is an admin is `judgelab admins` (docs/admins/sign-in.md). With --json, where it
    serves is one JSON document on stdout, printed before the server starts.
    """
    if pool_size is not None:
        os.environ[POOL_SIZE_ENV] = str(pool_size)  # this process's own pool too (the migration check)
    provider = provider_settings(oidc_file, server_metadata_url=oidc_metadata_url, client_id=oidc_client_id,
                                 client_secret=oidc_client_secret, cookie_secret=oidc_cookie_secret,
                                 scope=oidc_scope)
    store: MaintenanceRole = Store(db)
    port = choose_port(address, port)
    base = serving_url(address, port, base_url)
    _announce(store, address, port, base, as_json=as_json)
    sign_in = _sign_in(store, provider, base, err=as_json)
    _serve(store.location, port, address, base, pool_size, sign_in)


@click.command()
@click.option("--port", type=int, default=None, help=_PORT_HELP)
@click.option("--address", default="localhost", show_default=True, help=_ADDRESS_HELP)
@click.option("--base-url", envvar="JUDGELAB_BASE_URL", default=None, help=_BASE_URL_HELP)
@click.option("--no-serve", is_flag=True, help="Build the demo database and print the links only.")
@new_db_option
@json_option
def demo(port: int | None, address: str, base_url: str | None, no_serve: bool, db: str | None,
         as_json: bool) -> None:
    """Build a fresh demo database from the bundled examples and start the app on it.

    The links it prints point at the server it starts: on ``--port`` (refused at once if
    busy), else on 8501 or the next free port. A demo that fails part-way leaves no database.
    With --json the database, its summary and the links are one JSON document on stdout,
    printed before the server starts.
    """
    from judgelab.demo import build_demo_file

    if is_postgres(db):
        # The demo is a throwaway file (and its judge journals beside it); a server's database is not.
        raise InputError("the demo builds a DuckDB file, not a PostgreSQL database",
                         fix="leave --db out (or give a file path); on PostgreSQL use `judgelab init` and the imports.")
    port = (port or DEFAULT_PORT) if no_serve else choose_port(address, port)
    base = serving_url(address, port, base_url)
    folder = None if db else Path(tempfile.mkdtemp(prefix="judgelab-demo-"))
    path = resolve_db_path(db) if db else Path(folder or ".") / "demo.duckdb"
    result = build_demo_file(path, base_url=base, remove_folder=folder)
    store: MaintenanceRole = Store(path)
    if as_json:
        links = {"demo_db": str(path), "summary": list(result.summary_lines), "rater_link": result.rater_url,
                 "admin_link": result.admin_url}
        if no_serve:
            store.set_setting("project", BASE_URL_SETTING, base)
            echo_json({**links, "serving": False, "port": port, "app": base})
            return
        _announce(store, address, port, base, as_json=True, extra={**links, "serving": True})
        _serve(path, port, address, base)
        return
    click.echo(f"demo database: {path}")
    for line in result.summary_lines:
        click.echo(f"  {line}")
    click.echo(f"rater link: {result.rater_url}")
    click.echo(f"admin link: {result.admin_url}")
    if no_serve:
        store.set_setting("project", BASE_URL_SETTING, base)
        click.echo(f"not serving (--no-serve); start it with: judgelab serve --db {path} --port {port}")
        return
    _announce(store, address, port, base)
    _serve(path, port, address, base)


COMMANDS: list[click.Command] = [serve, demo]
