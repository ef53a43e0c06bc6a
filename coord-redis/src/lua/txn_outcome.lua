-- What became of this session's transaction ARGV[3] whose answer was lost:
-- {'applied', its answer} as transaction.lua kept it, or {'none'}; then
-- its outcome is marked '' for ARGV[4] ms, so the transaction, should it
-- still arrive, is refused (TXNLATE) and the answer stays true.
local mk = NS .. 't:' .. SID .. ':' .. ARGV[3]
local kept = redis.call('GET', mk)
if kept and kept ~= '' then return { 'applied', cmsgpack.unpack(kept) } end
redis.call('SET', mk, '', 'PX', ARGV[4])
return { 'none' }
