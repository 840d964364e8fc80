-- GET /notes/{id} for ids picked at random from a file of existing ids (one per line).
-- wrk ... URL -- IDS_FILE
-- The requests are formatted once in init(), so wrk spends its time sending, not building.
local requests = {}

function init(args)
    local path = assert(args[1], "usage: wrk -s note_get.lua URL -- IDS_FILE")
    for id in io.lines(path) do
        if id ~= "" then
            requests[#requests + 1] = wrk.format("GET", "/notes/" .. id)
        end
    end
    assert(#requests > 0, "no ids in " .. path)
    math.randomseed(os.time())
end

function request()
    return requests[math.random(#requests)]
end
