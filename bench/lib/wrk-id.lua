-- wrk script for bench/compare.sh's wrk-id: every request carries a unique
-- X-Rlbench-Id and the User-Agent rlbench sends (Go's), so that the backend
-- parses and records the same request head for wrk as for rlbench.
-- setup runs in the main state and sets tid as a global of each thread's
-- own state (wrk's scripts/setup.lua does the same).
local counter = 1
local n = 0

function setup(thread)
	thread:set("tid", counter)
	counter = counter + 1
end

function request()
	n = n + 1
	return wrk.format(nil, nil, {
		["User-Agent"] = "Go-http-client/1.1",
		["X-Rlbench-Id"] = "wrk-" .. tid .. "-" .. n,
	})
end
