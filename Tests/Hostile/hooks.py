"""schemathesis hooks for scripts/hostile-tests (SCHEMATHESIS_HOOKS=hooks, Tests/Hostile on PYTHONPATH).

Every request is signed in as the administrator scripts/hostile-tests sets up
(JOTTER_HOSTILE_TOKEN), except a sign-out: `DELETE /auth/sessions/current` revokes the
credential it is sent with, so each one gets a token of its own, created just before it
through `POST /auth/tokens`.
"""
import json
import os
import urllib.request

import schemathesis

BASE = os.environ["JOTTER_HOSTILE_URL"]
ADMIN_TOKEN = os.environ["JOTTER_HOSTILE_TOKEN"]
SIGN_OUT = "DELETE /auth/sessions/current"


def _bearer(case, token):
    case.headers = dict(case.headers or {})
    case.headers["Authorization"] = f"Bearer {token}"


@schemathesis.auth().skip_for(name=SIGN_OUT)
class Administrator:
    def get(self, case, ctx):
        return ADMIN_TOKEN

    def set(self, case, data, ctx):
        _bearer(case, data)


@schemathesis.auth(refresh_interval=None).apply_to(name=SIGN_OUT)
class TokenToSignOut:
    def get(self, case, ctx):
        request = urllib.request.Request(
            f"{BASE}/auth/tokens", data=b"label=sign-out", method="POST",
            headers={"Authorization": f"Bearer {ADMIN_TOKEN}", "Content-Type": "application/x-www-form-urlencoded"})
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.load(response)["token"]

    def set(self, case, data, ctx):
        _bearer(case, data)


ADMIN_NAME = "hostile-admin"
_admin_token_id = []


def _token_id():
    """The id of the administrator's own token (the one labelled hostile-tests)."""
    if not _admin_token_id:
        request = urllib.request.Request(f"{BASE}/auth/tokens", headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
        with urllib.request.urlopen(request, timeout=10) as response:
            tokens = json.load(response)["tokens"]
        _admin_token_id.append(next(t["id"] for t in tokens if t["label"] == "hostile-tests"))
    return _admin_token_id[0]


@schemathesis.hook
def before_call(ctx, case, **kwargs):
    """No case revokes the administrator's token, removes the administrator or changes its
    password (every later request would then be refused, which ones depending on the order):
    such a case names a token or user that does not exist instead, a documented 404. The
    stateful phase takes these names from earlier responses, so generation filters can't."""
    label = case.operation.label
    parameters = case.path_parameters or {}
    if label == "DELETE /auth/tokens/{id}" and str(parameters.get("id")) == _token_id():
        case.path_parameters = {**parameters, "id": "999999999"}
    elif label in ("DELETE /users/{name}", "PUT /users/{name}/password") and parameters.get("name") == ADMIN_NAME:
        case.path_parameters = {**parameters, "name": ADMIN_NAME + "-not"}
    if label in ("POST /uploads", "POST /upload") and (case.media_type or "").startswith("multipart/") \
            and not isinstance(case.body, dict):
        # The raw `*/*` body of these two (a string, not an object) given a multipart
        # Content-Type is sent by schemathesis in one boundary, which is no multipart body (its own
        # encoder says so): the server's 400 is right, yet was counted against a positive case.
        # Sent as the raw bytes it is.
        case.media_type = "application/octet-stream"


UPLOADS = ("POST /uploads", "POST /upload")


@schemathesis.hook
def filter_body(ctx, body):
    """A multipart field given as a list is sent as that field repeated, or not at all when the
    list is empty. Both are valid uploads: a repeated field reads as its last value (as PHP reads
    it; FormFields), `file` repeated is several files, and an absent `note_id` is no note. Yet
    schemathesis counts such a body as one the server must refuse; whether it then answered 201
    or 404 hung on whether the query's made-up `note_id` named a note made earlier in the run.
    (A dict body is multipart on these two: the other body they take is raw bytes.)"""
    if ctx.operation is None or ctx.operation.label not in UPLOADS or not isinstance(body, dict):
        return True
    return not any(isinstance(value, list) for value in body.values())
