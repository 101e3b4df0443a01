"""What every app page needs first: the project store and the person using the page.

Pages call these three helpers instead of touching the database or the URL
themselves, so that authentication and the invite token's place in the URL are
handled in one place.

* The store is cached per database *path* with ``st.cache_resource``: Streamlit
  sessions are threads in one process and share it (the store serialises its units
  of work with a lock, so sharing is safe), and keying by path keeps tests that use
  different temporary databases in one process apart.
* The invite token lives in ``?t=``. It is re-written into ``st.query_params`` on
  every run because Streamlit drops query parameters when ``st.navigation``
  switches page; keeping it there means a reload resumes where the rater was.
* Access is checked again by everything that writes for a rater: a widget's callback
  runs *before* the page's script (and a fragment's rerun skips ``app.py``), so a
  check at the top of the page alone would come too late (:func:`check_access`).
  Within one script run the token is checked once: the entry point, the page and a
  fragment (or a callback, then the fragment it reruns) share that run's answer.
* Without a token, a server with a sign-in provider (``judgelab serve --oidc-...``: an ``[auth]``
  section in Streamlit's secrets) lets people sign in through Streamlit's ``st.login``; who they
  are here (an admin from the project's admin list, or a rater mapped to their e-mail) is
  decided by :func:`judgelab.admin._signin.resolve_sign_in` on every check. A link always wins
  over a sign-in: a rater's link opened in an admin's browser shows that rater's pages only.
"""

from __future__ import annotations

import gc
import os

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

from judgelab.admin._incidents import LOAD_FAILED, record
from judgelab.admin._signin import SignInExpired, resolve_sign_in
from judgelab.labeler._actor import set_actor_source
from judgelab.labeler.errors import AccessError, JudgelabError, StoreError
from judgelab.labeler.store import Rater, RaterRole, Store, is_postgres, resolve_db_path

TOKEN_PARAM = "t"
_TOKEN_STATE = "_judgelab_token"
_REFUSED_STATE = "_judgelab_refused"
_CHECKED_STATE = "_judgelab_checked"
_KEPT_STATE = "_judgelab_kept"
_LAST_STATE = "_judgelab_last_rater"


def _server_trouble() -> tuple[type[Exception], ...]:
    """The errors that mean the database is away or failing, not that the rater did anything wrong.

    A database that stops, restarts or drops the connection mid-submit is an expected event on a
    rater's page: the page catches these where it catches access errors, keeps the details for the
    admin (:func:`~judgelab.admin._incidents.record`) and tells the rater one plain sentence. The
    drivers' own connection errors are listed beside :class:`~judgelab.labeler.errors.StoreError` because a
    unit of work that loses its connection halfway raises them as they are; a driver that is not
    installed adds none.
    """
    found: list[type[Exception]] = [StoreError]
    try:
        import duckdb
    except ImportError:  # pragma: no cover - duckdb is a dependency
        pass
    else:
        found += [duckdb.IOException, duckdb.ConnectionException]
    try:
        import psycopg
    except ImportError:
        pass
    else:
        found += [psycopg.OperationalError, psycopg.InterfaceError]
    try:
        from psycopg_pool import PoolTimeout
    except ImportError:
        pass
    else:
        found.append(PoolTimeout)
    return tuple(found)


#: What :func:`current_rater` and the rater pages catch as the server's trouble (see :func:`_server_trouble`).
SERVER_TROUBLE: tuple[type[Exception], ...] = _server_trouble()


#: Seconds the app server keeps the database open without a unit of work. Raters take
#: minutes per answer, and reopening the file after the store's default second of idle
#: added about 25 ms to each submit of a rater working alone (1 ms on an open file); any
#: judgelab process that asks for the file (the CLI, another server) still gets it within
#: about 0.05 s.
APP_IDLE_RELEASE = 300.0


@st.cache_resource(show_spinner=False)
def _store_for(path: str) -> Store:
    return Store(path, idle_release=APP_IDLE_RELEASE)


def db_path() -> str:
    """The database the app serves: ``$JUDGELAB_DB``, else ``./judgelab.duckdb``."""
    chosen = os.environ.get("JUDGELAB_DB")
    return str(chosen) if is_postgres(chosen) else str(resolve_db_path(chosen))


def rater_store() -> RaterRole:
    """The project store as a rater's page sees it: :class:`~judgelab.labeler.store.RaterRole` only.

    Typed so that mypy refuses a rater's page any call that could read an answer's family,
    model or variant, another rater, or the admin's data (blind means blind).
    """
    return current_store()


def current_store() -> Store:
    """The project store for ``$JUDGELAB_DB`` (one per path per process)."""
    try:
        return _store_for(db_path())
    except StoreError as exc:
        # Nobody is signed in yet (that needs the store): the path and the fix go to the server's
        # log only, and everyone reads one plain sentence.
        record(exc, where="open the project database")
        st.error(LOAD_FAILED)
        st.stop()
        raise  # unreachable: st.stop() raises; keeps type checkers honest
    except JudgelabError as exc:
        show_error(exc)
        st.stop()
        raise  # unreachable


def open_project() -> Store:
    """Open the project store the pages share and read its rubric, before any page asks.

    For the server's start (:func:`judgelab.cli._streamlit.preload`): the first rater's page
    then finds the store open (connection, migrations checked) and the first query's code
    (DuckDB's conversion to pandas) loaded. Raises what opening raises; the launcher leaves it
    for the page, which shows it to the admin's log and a plain sentence to the rater.
    """
    store = _store_for(db_path())
    store.rubric()
    return store


def current_token() -> str | None:
    """The invite token from the URL, kept in the URL so that a reload resumes.

    The token is also remembered in session state (never rendered) because a page
    switch through ``st.navigation`` can arrive without the query string; it is then
    written back into the URL.
    """
    token = st.query_params.get(TOKEN_PARAM) or st.session_state.get(_TOKEN_STATE)
    if token:
        st.session_state[_TOKEN_STATE] = token
        if st.query_params.get(TOKEN_PARAM) != token:
            st.query_params[TOKEN_PARAM] = token
    return token or None


def sign_in_configured() -> bool:
    """Whether this server signs people in with a provider (its secrets hold an ``[auth]`` section)."""
    try:
        return bool(st.secrets.load_if_toml_exists() and "auth" in st.secrets)
    except Exception:  # an unreadable secrets file: Streamlit logs it; nobody signs in
        return False


def signed_in_claims() -> dict[str, object] | None:
    """The ID token's claims of whoever signed in through the provider in this browser, else ``None``."""
    if not sign_in_configured():
        return None
    try:
        user = st.user.to_dict()
    except Exception:  # no session context (a script run outside the server)
        return None
    return dict(user) if user.get("is_logged_in") else None


def _credential() -> str | None:
    """What this run's access was checked against: the token, else the signed-in e-mail and time."""
    token = current_token()
    if token:
        return token
    claims = signed_in_claims()
    return None if claims is None else f"signed-in:{claims.get('email')}:{claims.get('iat')}"


def current_actor() -> str:
    """Who is acting, for the record (an audit trail): the signed-in e-mail, else the rater's name.

    A link wins over a sign-in (as in :func:`check_access`): with a ``?t=`` token the actor is that
    link's rater (or admin). Checks access like :func:`current_rater` (cheap within one run).
    """
    rater = current_rater()
    if not current_token():
        claims = signed_in_claims()
        if claims is not None and claims.get("email"):
            return str(claims["email"]).strip().lower()
    return rater.name


def _this_run() -> object | None:
    """An object that exists for the current script run only (``None`` outside one).

    Streamlit makes a new parallel-fragment coordinator for each run (a fragment's rerun
    too), before the run's callbacks; holding a reference to it keeps a remembered run
    from matching a later one. Not the run's element cursors: a fragment's rerun swaps
    those for a copy after its callbacks, so its callback's check was never reused. A
    Streamlit without the coordinator (it is not public API) falls back to the cursors
    (full runs still reuse the check), and without both to ``None``: every call then
    checks the token again, which is slower, never less safe.
    """
    ctx = get_script_run_ctx(suppress_warning=True)
    if ctx is None:
        return None
    run = getattr(ctx, "parallel_coordinator", None)
    return run if run is not None else getattr(ctx, "cursors", None)


def check_access() -> Rater:
    """The rater the ``?t=`` token belongs to, else who signed in with the provider; checked now.

    The answer is remembered for the rest of this script run (:func:`current_rater`).

    Raises:
        AccessError: The token is missing, unknown, revoked or expired, and nobody signed in (or
            the person who did is neither on the admin list nor a rater, or their sign-in expired).
    """
    st.session_state.pop(_CHECKED_STATE, None)
    token = current_token()
    claims = None if token else signed_in_claims()
    store = current_store()
    rater = resolve_sign_in(store, claims) if claims is not None else store.authenticate(token)
    key = _credential()
    st.session_state[_CHECKED_STATE] = (_this_run(), key, rater)
    st.session_state[_LAST_STATE] = (key, rater)
    return rater


def known_rater_name() -> str:
    """The name of whoever this session's token last proved to be, without asking the database.

    For the admin's record of an error that happened while the database was away (``""``: none yet).
    """
    last = st.session_state.get(_LAST_STATE)
    if isinstance(last, tuple) and last[0] == _credential():
        return str(last[1].name)
    return ""


def admin_actor() -> str | None:
    """Who the audit trail records for an action taken on a page: ``admin:<name>`` of this session.

    The name is the one this session's link last proved (:func:`check_access`), read without asking
    the database: a store write asks mid-transaction. ``None`` outside a page's run (the CLI, a test),
    so the caller's own actor applies there (:func:`judgelab.labeler._actor.current_actor`).
    """
    if get_script_run_ctx(suppress_warning=True) is None:
        return None
    last = st.session_state.get(_LAST_STATE)
    if isinstance(last, tuple) and isinstance(last[1], Rater):
        return f"{'admin' if last[1].is_admin else 'rater'}:{last[1].name}"
    return "app:unknown"


# Process-wide and harmless outside a page's run (it answers None there): every store write made
# while a page runs is recorded as that session's admin's (issue 57).
set_actor_source(admin_actor)


def _checked_this_run() -> Rater | None:
    """The rater :func:`check_access` found earlier in this script run for the same token."""
    memo = st.session_state.get(_CHECKED_STATE)
    run = _this_run()
    if run is None or not isinstance(memo, tuple) or memo[0] is not run:
        return None
    return memo[2] if memo[1] == _credential() else None


def refuse(*, not_saved: bool, kept: str = "") -> None:
    """Remember a refused action, so the page says so when it shows "Access denied".

    ``kept``: text the rater typed into the refused form (a comment); shown under the
    refusal, to copy, so it does not vanish with the form.
    """
    st.session_state[_REFUSED_STATE] = "Your last submit was not saved." if not_saved else ""
    st.session_state[_KEPT_STATE] = kept


def current_rater(*, raise_trouble: bool = False) -> Rater:
    """The rater the ``?t=`` token belongs to; stops the page with a message if none is valid.

    Checked once per script run: a second call in the same run (the page after the entry
    point, a fragment after the callback that checked) returns the first call's rater.

    When the database cannot answer (:data:`SERVER_TROUBLE`: stopped, restarting, a dropped
    connection) the details go to the admin (server log, Overview) and the page stops with one
    plain sentence (:data:`~judgelab.admin._incidents.LOAD_FAILED`), never Streamlit's error box;
    with ``raise_trouble`` the error is raised instead, for a page that draws something better.
    """
    checked = _checked_this_run()
    if checked is not None:
        return checked
    try:
        return check_access()
    except SERVER_TROUBLE as exc:
        if raise_trouble:
            raise
        record(exc, where="check the invite link", rater=known_rater_name())
        st.warning(LOAD_FAILED)
        st.stop()
        raise  # unreachable
    except AccessError as exc:
        if not current_token() and sign_in_configured():
            _sign_in_screen(exc)
        refused = st.session_state.pop(_REFUSED_STATE, "")
        kept = st.session_state.pop(_KEPT_STATE, "")
        st.error(f"Access denied: {exc}" + (f"  \n{refused}" if refused else ""))
        if kept:
            # Shown as typed (a code block renders no Markdown), with Streamlit's copy button.
            st.caption("What you typed, to copy:")
            st.code(kept, language=None, wrap_lines=True)
        st.stop()
        raise  # unreachable


def _sign_in_screen(exc: AccessError) -> None:
    """No link, on a server with a provider: a Sign-in button, or why the signed-in person is refused."""
    if signed_in_claims() is None:
        st.title("judgelab")
        st.write("Sign in with your organisation's account, or open the link your admin sent you.")
        st.button("Sign in", type="primary", on_click=st.login, key="jl-sign-in")
    elif isinstance(exc, SignInExpired):
        st.warning(f"{str(exc)[:1].upper()}{str(exc)[1:]}")
        st.button("Sign in again", type="primary", on_click=st.login, key="jl-sign-in")
    else:
        st.error(f"Access denied: {exc}")
        st.button("Sign out", on_click=st.logout, key="jl-sign-out")
    st.stop()


def sign_out_button() -> None:
    """A Sign-out button in the sidebar, for whoever signed in with the provider (not a link's holder)."""
    if not current_token() and signed_in_claims() is not None:
        st.sidebar.button("Sign out", on_click=st.logout, key="jl-sign-out")


_settled = False


def settle_heap() -> None:
    """After the first page a process serves, freeze what is alive for the cyclic collector.

    By then the server holds Streamlit, pandas, DuckDB and the pages' modules: objects that
    live as long as the process, yet every full collection walked all of them, stalling
    whichever submit was running (23-65 ms each, measured with ``gc.callbacks`` during
    ``bench/browser_roundtrip.py``; none after the freeze). Frozen (:func:`gc.freeze`), the
    collector skips them; reference counting still frees them.
    """
    global _settled
    if not _settled:
        _settled = True
        gc.freeze()


def show_error(exc: JudgelabError) -> None:
    """An error as the app shows it: the problem, and the fix on its own line."""
    st.error(str(exc).replace("\n", "  \n"))


def require_admin() -> Rater:
    """The current rater if they are an admin; stops the page otherwise."""
    rater = current_rater()
    if not rater.is_admin:
        st.error("Access denied: this page is for admins.")
        st.stop()
    return rater


__all__ = [
    "SERVER_TROUBLE",
    "TOKEN_PARAM",
    "admin_actor",
    "check_access",
    "current_actor",
    "current_rater",
    "current_store",
    "current_token",
    "db_path",
    "known_rater_name",
    "refuse",
    "require_admin",
    "settle_heap",
    "show_error",
    "sign_in_configured",
    "sign_out_button",
    "signed_in_claims",
]
