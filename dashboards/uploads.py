"""Uploads: size-capped, type-checked, stored in the dashboard's private upload folder.

Three fences, outermost first:
1. the browser: a client-side callback measures the files dropped on an upload box and refuses
   anything over the cap with a message, before a byte leaves the browser;
2. the server's request limit (Flask `MAX_CONTENT_LENGTH`, set by `create_app`): a request body
   larger than the cap can carry (base64 plus JSON framing) is refused before it is read;
3. `store_uploads`: the decoded size is computed from the base64 length and checked *before*
   decoding; the file is then written under a sanitised name into a staging folder inside the
   upload folder and offered to the parser registry's sniff (or recognised as a claim file); only
   a recognised file is moved into the upload folder and loaded.

Files are stored side by side under their own (sanitised) names, so a claim uploaded with its
timing logs finds them by the names it gives; a later upload of the same name replaces the earlier.

Folder formats (an XLA log dir, a Neuron Explorer Parquet folder, a profaudit dataset) travel as a
`.zip`: it is unpacked into a folder of the same stem, member by member, refusing absolute paths,
`..`, links and special files, and stopping at an unpacked-size cap, so a crafted archive can
neither write outside that folder nor fill the disk.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
import shutil
import tempfile
import stat
import unicodedata
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from profaudit.dashboards.access import CLAIM_SUFFIXES, looks_like_claim
from profaudit.errors import InputError, ProfauditError, first_line

# JSON framing and the other fields of a callback request, on top of the base64 payload.
REQUEST_OVERHEAD_BYTES = 1 << 20
MAX_FILES_PER_UPLOAD = 32
_NAME_MAX = 120
# profiles compress 5-20x; past this an archive is treated as a zip bomb
ZIP_EXPANSION_LIMIT = 8
MAX_ZIP_MEMBERS = 20_000


def request_limit(max_upload_bytes: int) -> int:
    """Largest callback request body that can carry `max_upload_bytes` of files."""
    return (max_upload_bytes + 2) // 3 * 4 + REQUEST_OVERHEAD_BYTES


def decoded_size(data_url: str) -> int:
    """Bytes a base64 data URL decodes to, computed from its length (nothing is decoded)."""
    _, sep, payload = data_url.partition(",")
    if not sep:
        payload = data_url
    n = len(payload)
    pad = 2 if payload.endswith("==") else 1 if payload.endswith("=") else 0
    return max(0, n * 3 // 4 - pad)


def safe_name(name: str) -> str:
    """A file name that stays inside the folder it is written to: no folders, no dot-files, no
    control or separator characters, bounded length; the suffix (which decides the parser) kept."""
    base = re.split(r"[\\/]", str(name or ""))[-1]
    base = unicodedata.normalize("NFC", base)
    base = "".join(ch for ch in base if ch.isprintable() and ch not in '<>:"|?*')
    base = base.strip().lstrip(".").strip()
    if not base:
        base = "upload"
    if len(base) > _NAME_MAX:
        stem, dot, suffix = base.partition(".")
        base = stem[: _NAME_MAX - len(suffix) - 1] + dot + suffix if dot and len(suffix) < 40 else base[:_NAME_MAX]
    return base


def mb(n: int) -> str:
    return f"{n / (1 << 20):.1f} MiB" if n >= 1 << 20 else f"{n / 1024:.0f} KiB" if n >= 1024 else f"{n} bytes"


@dataclass
class UploadResult:
    name: str
    ok: bool
    text: str


def store_uploads(st, contents: Sequence[str] | str | None, filenames: Sequence[str] | str | None) -> list[UploadResult]:
    """Check, store and load uploaded files; one result line per file (nothing raises)."""
    if contents is None:
        return []
    if isinstance(contents, str):
        contents = [contents]
    if isinstance(filenames, str) or filenames is None:
        filenames = [filenames or "upload"]
    filenames = list(filenames) + ["upload"] * (len(contents) - len(filenames))
    cap = st.max_upload_bytes
    if len(contents) > MAX_FILES_PER_UPLOAD:
        return [UploadResult("", False, f"{len(contents)} files at once: upload at most {MAX_FILES_PER_UPLOAD} at a time")]
    sizes = [decoded_size(c) if isinstance(c, str) else -1 for c in contents]
    total = sum(s for s in sizes if s > 0)
    if total > cap:
        return [UploadResult(safe_name(n), False, f"{safe_name(n)}: not stored: the upload ({mb(total)}) is over the {mb(cap)} limit") for n in filenames]
    results = []
    for data, raw_name, size in zip(contents, filenames, sizes, strict=False):
        name = safe_name(raw_name)
        try:
            results.append(_store_one(st, data, name, size))
        except ProfauditError as exc:
            results.append(UploadResult(name, False, server_paths_hidden(str(exc), st.upload_dir)))
        except Exception as exc:  # a parser bug must not take the page down; the message says so
            msg = first_line(exc)
            results.append(UploadResult(name, False, server_paths_hidden(f"{name}: cannot load: {type(exc).__name__}: {msg}", st.upload_dir)))
    return results


def server_paths_hidden(message: str, upload_dir: Path) -> str:
    """`message` with the server's upload folder (and its staging folders) cut from every path:
    a visitor sees `run.json: problem`, never where the server keeps its files."""
    for base in {str(upload_dir), str(Path(upload_dir).resolve())}:
        message = re.sub(re.escape(base.rstrip("/")) + r"/(?:\.staging-[^/\s]+/)?", "", message)
    return message


def _store_one(st, data: object, name: str, size: int) -> UploadResult:
    if not isinstance(data, str) or not data.startswith("data:") or ";base64," not in data[:512]:
        raise InputError(name, "not stored: the upload is not a base64 data URL")
    if size > st.max_upload_bytes:
        raise InputError(name, f"not stored: {mb(size)} is over the {mb(st.max_upload_bytes)} upload limit")
    if size == 0:
        raise InputError(name, "not stored: empty file")
    payload = data.split(",", 1)[1]
    try:
        raw = base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError):
        raise InputError(name, "not stored: the upload is not valid base64") from None
    staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=st.upload_dir))
    try:
        tmp = staging / name
        with open(tmp, "wb") as f:
            f.write(raw)
        if name.lower().endswith(".zip") and raw[:4] == b"PK\x03\x04":
            return _store_zip(st, tmp, name, size, staging)
        kind = _kind(tmp)
        final = st.upload_dir / name
        os.replace(tmp, final)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    if kind == "claim":
        st.add_uploaded_claim(final)
        return UploadResult(name, True, f"{name}: claim file stored ({mb(size)}); choose it on the Audit page")
    try:
        profiles = st.add_uploaded_profile(final)
    except ProfauditError:
        final.unlink(missing_ok=True)
        st.forget_upload(name)
        raise
    return UploadResult(name, True, f"{name}: loaded {_loaded(profiles)}")


def _store_zip(st, archive: Path, name: str, size: int, staging: Path) -> UploadResult:
    """Unpack an uploaded archive into a folder named after it and load that folder."""
    stem = safe_name(name[: -len(".zip")]) if len(name) > 4 else "upload"
    unpacked = staging / stem
    _unzip(archive, unpacked, name, st.max_upload_bytes * ZIP_EXPANSION_LIMIT)
    entries = list(unpacked.iterdir())
    # an archive of one folder (zip -r run.zip run/) loads that folder
    root = entries[0] if len(entries) == 1 and entries[0].is_dir() else unpacked
    final = st.upload_dir / stem
    if final.is_dir() and not final.is_symlink():
        shutil.rmtree(final)
    elif final.exists() or final.is_symlink():
        final.unlink()
    os.replace(root, final)
    try:
        profiles = st.add_uploaded_profile(final)
    except ProfauditError as exc:
        shutil.rmtree(final, ignore_errors=True)
        st.forget_upload(stem)
        raise InputError(name, f"nothing loaded from the archive: {exc}") from None
    return UploadResult(name, True, f"{name}: unpacked to {stem}/ and loaded {_loaded(profiles)}")


def _loaded(profiles) -> str:
    return ", ".join(f"{p.profile_id} ({p.metadata.get('format') or p.metadata.get('source')}: {p.kernels.height} kernels, {p.samples.height} samples)" for p in profiles)


def _unzip(archive: Path, dest: Path, name: str, max_bytes: int) -> None:
    try:
        zf = zipfile.ZipFile(archive)
    except (zipfile.BadZipFile, OSError) as exc:
        raise InputError(name, f"not stored: not a readable zip archive ({exc})") from None
    with zf:
        members = zf.infolist()
        if not members:
            raise InputError(name, "not stored: the zip archive is empty")
        if len(members) > MAX_ZIP_MEMBERS:
            raise InputError(name, f"not stored: {len(members):,} entries in the archive (at most {MAX_ZIP_MEMBERS:,})")
        declared = sum(m.file_size for m in members)
        if declared > max_bytes:
            raise InputError(name, f"not stored: the archive unpacks to {mb(declared)}, over the {mb(max_bytes)} limit")
        dest.mkdir()
        written = 0
        for m in members:
            parts = _member_parts(m, name)
            if not parts:
                continue
            target = dest.joinpath(*parts)
            try:
                # a folder member where a file was unpacked (or the reverse) and a name longer than
                # the file system takes are the archive's fault: OSErrors here are one line
                if m.is_dir():
                    target.mkdir(parents=True, exist_ok=True)
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                with zf.open(m) as src, open(target, "xb") as out:
                    while chunk := src.read(1 << 20):
                        written += len(chunk)
                        if written > max_bytes:
                            raise InputError(name, f"not stored: the archive unpacks to more than {mb(max_bytes)}")
                        out.write(chunk)
            except FileExistsError:
                raise InputError(name, f"not stored: the archive holds {m.filename!r} twice, or as both a file and a folder") from None
            except (zipfile.BadZipFile, EOFError, zlib.error, NotImplementedError, RuntimeError) as exc:
                raise InputError(name, f"not stored: cannot unpack {m.filename!r} ({exc})") from None
            except OSError as exc:
                raise InputError(name, f"not stored: cannot unpack {m.filename!r} ({exc.strerror or type(exc).__name__})") from None


def _member_parts(m: zipfile.ZipInfo, name: str) -> list[str]:
    """The path components of a member, or InputError when unpacking it would leave the folder."""
    # many writers leave the file-type bits at zero; only a type that is set and not a plain file or
    # folder is refused
    kind = stat.S_IFMT(m.external_attr >> 16)
    if kind and kind not in (stat.S_IFREG, stat.S_IFDIR):
        raise InputError(name, f"not stored: {m.filename!r} in the archive is a link or special file")
    raw = m.filename.replace("\\", "/")
    if raw.startswith("/") or re.match(r"^[A-Za-z]:", raw):
        raise InputError(name, f"not stored: {m.filename!r} in the archive is an absolute path")
    parts = [p for p in raw.split("/") if p not in ("", ".")]
    if any(p == ".." for p in parts):
        raise InputError(name, f"not stored: {m.filename!r} in the archive points outside its folder")
    if any(p.startswith("__MACOSX") for p in parts[:1]) or (parts and parts[-1] == ".DS_Store"):
        return []  # macOS Finder's resource forks, not profiles
    if any(not p.isprintable() for p in parts):
        raise InputError(name, f"not stored: {m.filename!r} in the archive has control characters in its name")
    return parts


def _kind(path: Path) -> str:
    """'claim' or 'profile'; InputError when neither the claim check nor any parser's sniff knows it."""
    from profaudit.parsers import find_parser

    if path.name.lower().endswith(CLAIM_SUFFIXES):
        if looks_like_claim(path):
            return "claim"
        raise InputError(path.name, "not stored: a YAML file is accepted only as a claim file (a mapping with baseline and candidate)")
    if find_parser(path) is None:
        raise InputError(path.name, "not stored: not a profile, timing log or claim file profaudit recognises (profaudit formats lists them; upload a folder format as a .zip)")
    return "profile"


# -- the upload box, shared by the Overview and Audit pages -----------------------------------------

_CLIENT_GUARD = """
function(contents, filenames, limit) {
    const nu = window.dash_clientside.no_update;
    if (!contents) { return [nu, nu]; }
    const list = Array.isArray(contents) ? contents : [contents];
    const names = Array.isArray(filenames) ? filenames : [filenames];
    let total = 0;
    for (const c of list) {
        const s = String(c || "");
        const k = s.indexOf(",");
        const n = k >= 0 ? s.length - k - 1 : s.length;
        const pad = s.endsWith("==") ? 2 : (s.endsWith("=") ? 1 : 0);
        total += Math.max(0, Math.floor(n * 3 / 4) - pad);
    }
    if (total > limit) {
        const mib = (x) => (x / 1048576).toFixed(1) + " MiB";
        return [nu, "Not uploaded: " + names.join(", ") + " (" + mib(total) + ") is over the " + mib(limit) + " upload limit."];
    }
    return [{contents: list, filenames: names, at: Date.now()}, ""];
}
"""


def upload_box(prefix: str, what: str):
    """An upload area; `prefix` keeps ids apart between pages."""
    from dash import dcc, html

    from profaudit.dashboards.ui import state

    cap = state().max_upload_bytes
    return html.Div(
        [
            dcc.Upload(
                id=f"{prefix}-upload",
                children=html.Div([html.B("Drop files here"), " or ", html.A("choose files"), html.Span(f" — {what}; up to {mb(cap)} per upload", className="muted")]),
                multiple=True,
                className="upload",
            ),
            dcc.Store(id=f"{prefix}-upload-limit", data=cap),
            dcc.Store(id=f"{prefix}-upload-accepted"),
            html.Div(id=f"{prefix}-upload-client-msg", className="msg msg-error", role="alert", style={"display": "none"}),
            html.Div(id=f"{prefix}-upload-result"),
        ],
        className="upload-block",
    )


def register_upload_callbacks(app, prefix: str, extra_outputs: Sequence = (), after=None) -> None:
    """Wire the upload box: the client-side size fence, then the server-side store.

    `after(results)` returns values for `extra_outputs` (a page refreshing what it shows)."""
    from dash import Input, Output, State, html, no_update

    from profaudit.dashboards.ui import guarded, message, state

    app.clientside_callback(
        _CLIENT_GUARD,
        Output(f"{prefix}-upload-accepted", "data"),
        Output(f"{prefix}-upload-client-msg", "children"),
        Input(f"{prefix}-upload", "contents"),
        State(f"{prefix}-upload", "filename"),
        State(f"{prefix}-upload-limit", "data"),
    )
    app.clientside_callback(
        "function(m) { return m ? {} : {display: 'none'}; }",
        Output(f"{prefix}-upload-client-msg", "style"),
        Input(f"{prefix}-upload-client-msg", "children"),
    )
    n_extra = len(extra_outputs)

    @guarded(fallback=[no_update] * (2 + n_extra), msg_at=0)
    def on_upload(accepted):
        if not accepted:
            return [no_update] * (2 + n_extra)
        results = store_uploads(state(), accepted.get("contents"), accepted.get("filenames"))
        box = html.Div([message(r.text, "ok" if r.ok else "error") for r in results])
        extra = list(after(results)) if after is not None and n_extra else []
        # Clearing the box's contents lets the same file be uploaded again.
        return [box, None, *extra]

    app.callback(
        Output(f"{prefix}-upload-result", "children"),
        Output(f"{prefix}-upload", "contents"),
        *extra_outputs,
        Input(f"{prefix}-upload-accepted", "data"),
        prevent_initial_call=True,
    )(on_upload)


__all__ = ["store_uploads", "decoded_size", "safe_name", "request_limit", "UploadResult", "upload_box", "register_upload_callbacks"]
