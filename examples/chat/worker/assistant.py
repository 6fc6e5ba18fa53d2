"""The chat's assistant as a Python worker (ward-chat --assistant-worker).

It reads one JSON request per line on stdin: a conversation's messages as
stored (ciphertext v4 under the user's own key) and a subject grant of
message bodies for that user, which the service derived from the user's
key. It opens the messages with the ward package — the grant opens that
user's bodies and nothing else: not titles, not e-mail addresses, not
another user's messages — and writes one JSON reply per line. A real
assistant would call a model where ``reply`` summarises.
"""

from __future__ import annotations

import json
import sys

from ward import Column, WardError
from ward.subject import SubjectGrant

BIND = ["conversation_id", "user_id", "role"]  # how the chat binds messages.body


def reply(history: list[tuple[str, str]]) -> str:
    """The stand-in model: what it read, and the user's last message."""
    users = [body for role, body in history if role == "user"]
    last = users[-1] if users else ""
    if len(last) > 80:
        last = last[:80] + "…"
    return f"[python assistant] I read {len(history)} messages of context ({len(users)} from you). You said: {json.dumps(last, ensure_ascii=False)}"


def answer(req: dict) -> dict:
    grant = SubjectGrant.loads(req["grant"])
    if (grant.table, grant.column) != ("messages", "body") or grant.subject != req["user_id"]:
        return {"error": "the grant is not for this user's message bodies"}
    bodies = Column("messages", "body", None, bind=BIND, subjects=grant, subject_column="user_id")
    history = []
    for m in req["messages"]:
        text = bodies.open_text(m["body"], m["id"], req["conversation_id"], req["user_id"], m["role"])
        history.append((m["role"], text))
    return {"reply": reply(history)}


def main() -> int:
    for line in sys.stdin:
        try:
            out = answer(json.loads(line))
        except WardError as e:  # a value that does not open: say so, never guess
            out = {"error": f"{type(e).__name__}: {e}"}
        except (KeyError, TypeError, ValueError) as e:
            out = {"error": f"a malformed request: {type(e).__name__}"}
        sys.stdout.write(json.dumps(out, ensure_ascii=False) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
