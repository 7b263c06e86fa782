"""The one fake Responses API response of the tests: what NeMo Gym's agents send as a verify request's
`response` (its model validates it: resources_servers' NeMoGymResponse), one assistant message whose
`output_text` parts are the given texts."""

from __future__ import annotations

from typing import Any


def fake_response(
    *texts: str, status: str = "completed", id: str = "resp_test", model: str | None = None
) -> dict[str, Any]:
    """A response of one assistant message holding `texts` (one output_text part each); `model` is the
    model the server says answered (left out when None: a rollout's model is then its request's)."""
    response: dict[str, Any] = {"id": id, "created_at": 0}
    if model is not None:
        response["model"] = model
    response |= {
        "object": "response",
        "status": status,
        "output": [
            {
                "id": "msg_test",
                "type": "message",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": t, "annotations": []} for t in texts],
            }
        ],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
    }
    return response
