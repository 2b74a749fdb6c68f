-- KEYS[1] fence counter (no TTL). Reply: {1, fence, server ms}, as
-- acquire.lua's, so that the same decoder and WAIT handling apply.
local f, ms = next_fence(KEYS[1])
return {1, f, ms}
