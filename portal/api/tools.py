"""Model tools over HTTP: the four function schemas, and running one for a person."""

from __future__ import annotations

from portal.api.memories import service
from portal.api.problems import ApiProblem
from portal.api.registry import Api, Call, Reply, parse_json
from portal.api.schemas import Problem, ToolCallIn, ToolOut, ToolResultOut
from portal.domain.errors import Refused
from portal.services.tool_schemas import tool_schemas
from portal.services.tools import run_tool

READ_ONLY = {"recall"}


def register(api: Api) -> None:
    @api.route("GET", "/tools", summary="The model tools in the OpenAI function-calling format",
               responses={200: [ToolOut]})
    def list_tools(call: Call) -> Reply:
        return Reply(200, [ToolOut.model_validate(t) for t in tool_schemas(service().options)])

    @api.route("POST", "/people/<owner_id>/tools/<name>", summary="Run one model tool for a person",
               body=ToolCallIn, responses={200: ToolResultOut, 422: Problem}, redactable=True,
               permission=lambda path: "memories:read" if path.get("name") in READ_ONLY else "memories:write",
               receipts=lambda path: path.get("name") not in READ_ONLY)
    def call_tool(call: Call) -> Reply:
        """What the model asked for, for the person in the path (never a person the model names). With
        the AI switched off for the tenant every tool answers `{"ok": false, "code": "refused",
        "reason": "ai_disabled"}` and changes nothing. `conversation_ref` (the host's, like `role`):
        what the tool hands the model is recorded as given to that conversation of the app."""
        name = call.path["name"]
        b: ToolCallIn = call.body
        arguments = b.arguments
        if isinstance(arguments, str):
            # Models often send the arguments as a JSON string, as the function-calling format does.
            try:
                arguments = parse_json(arguments) if arguments.strip() else {}
            except ApiProblem as exc:
                if exc.code == "malformed_json":
                    raise ApiProblem(400, "malformed_arguments", "arguments is not JSON") from None
                raise
        result = run_tool(service(b.conversation_ref), call.place, name, arguments, role=b.role, explicit=b.explicit,
                          language=b.language, person_name=b.person_name)
        if result.get("reason") == "app_blocked":  # the backend is told as every other endpoint tells it
            raise Refused("app_blocked")
        return Reply(200, ToolResultOut.model_validate(result))
