package lockwire

import _ "embed"

// ValueLua is the Lua prelude that builds, reads and edits stored values
// (value.lua): every script that touches a value starts with it, before
// its other preludes. It calls no Redis command, so the lists of commands
// the scripts need (doctor's ACL check) do not change with it.
//
//go:embed value.lua
var ValueLua string
