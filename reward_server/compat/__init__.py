"""The peers' remote reward protocols, served over the server's own scoring path.

    POST /compat/openrlhf/{task}/get_reward   OpenRLHF (--reward.remote_url)
    POST /compat/slime/{task}                 slime (--rm-type remote_rm --rm-url)

``task`` is a scorer (``math``, ``react``, ...); its options are query parameters
(``?level=build``). The app includes :data:`router`: it has the same API key (also accepted as
Basic auth's password, which the peers' aiohttp clients send from the URL), body limit, request
limits, backpressure and errors as ``/v1/rewards``. docs/integrations.md
has the command lines.
"""
from fastapi import APIRouter, Depends

from botgrpo.reward_server.compat import openrlhf, slime
from botgrpo.reward_server.compat.core import authorised

router = APIRouter(prefix="/compat", tags=["compat"], dependencies=[Depends(authorised)])
router.include_router(openrlhf.router)
router.include_router(slime.router)

__all__ = ["router"]
