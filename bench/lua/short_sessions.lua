-- short_sessions.lua: every 10th request of a wrk thread asks to close its
-- connection, so connections carry 10 requests on average (httperf's
-- --num-calls 10 shape). wrk reconnects when the server closes.
local normal, closing
local i = 0

function init(args)
   normal = wrk.format(nil, bench_path)
   local h = {}
   for k, v in pairs(wrk.headers) do h[k] = v end
   h["Connection"] = "close"
   closing = wrk.format(nil, bench_path, h)
end

function request()
   i = i + 1
   if i % 10 == 0 then
      return closing
   end
   return normal
end
