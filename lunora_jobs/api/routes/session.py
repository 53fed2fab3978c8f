"""The console's session: sign in with a token (an HttpOnly cookie), read the CSRF token, sign out."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request, Response, status

from lunora_jobs.api.auth.base import AuthenticationError, Identity
from lunora_jobs.api.context import ApiContext
from lunora_jobs.api.problems import ProblemError
from lunora_jobs.api.schemas import AgentOut, AgentsOut, HealthOut, SessionIn, SessionOut
from lunora_jobs.api.security import SESSION_COOKIE, Credential, credential_of, csrf_token, same_origin

SESSION_MAX_AGE_S = 12 * 3600


def router(ctx: ApiContext) -> APIRouter:
    """Session, agents and health routes."""
    api = APIRouter()
    identity = Depends(ctx.gate)

    @api.post("/session", response_model=SessionOut, tags=["session"])
    def sign_in(body: SessionIn, request: Request, response: Response) -> SessionOut:
        """Verify ``token`` and keep it in an HttpOnly, SameSite=Strict cookie for the console."""
        if not same_origin(request, ctx.gate.allowed_origins):
            # Login CSRF: another site must not sign a visitor's browser into an account it chose.
            raise ProblemError(403, "cross-origin", "sign in from the console's own origin.")
        who = ctx.gate.verify(Credential(body.token, via_cookie=True))
        response.set_cookie(SESSION_COOKIE, body.token, max_age=SESSION_MAX_AGE_S, httponly=True,
                            samesite="strict", secure=request.url.scheme == "https", path="/")
        return SessionOut(subject=who.subject, admin=who.admin, tenant=who.tenant,
                          csrf_token=csrf_token(body.token))

    @api.get("/session", response_model=SessionOut, tags=["session"])
    def whoami(request: Request, who: Identity = identity) -> SessionOut:
        """Who the caller is; cookie sessions also get the CSRF token their writes must send."""
        credential = credential_of(request)
        token = csrf_token(credential.value) if credential is not None and credential.via_cookie else None
        return SessionOut(subject=who.subject, admin=who.admin, tenant=who.tenant, csrf_token=token)

    @api.delete("/session", status_code=status.HTTP_204_NO_CONTENT, tags=["session"])
    def sign_out(request: Request, response: Response) -> None:
        """Drop the session cookie."""
        credential = credential_of(request)
        if credential is None:
            raise AuthenticationError("not signed in.")
        if credential.via_cookie:
            ctx.gate.check_csrf(request, credential)
        response.delete_cookie(SESSION_COOKIE, path="/", httponly=True, samesite="strict")

    @api.get("/agents", response_model=AgentsOut, tags=["agents"])
    def agents(who: Identity = identity) -> AgentsOut:
        """The agents this API can start."""
        return AgentsOut(agents=[AgentOut(name=a.name, tools=sorted(a.definition.tools))
                                 for a in ctx.lunora.agents])

    @api.get("/healthz", response_model=HealthOut, tags=["health"])
    def health() -> HealthOut:
        """Liveness (no authentication)."""
        return HealthOut(status="ok")

    return api
