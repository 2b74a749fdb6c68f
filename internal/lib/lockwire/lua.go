package lockwire

import _ "embed"

// ValueLua is the Lua prelude that builds, reads and edits stored values
// (value.lua): every script that touches a value starts with it, before
// its other preludes. It calls no Redis command, so the lists of commands
// the scripts need (doctor's ACL check) do not change with it.
//
//go:embed value.lua
var ValueLua string

// WakeLua is the Lua prelude that decides whom a freed lock wakes and wakes
// them (wake.lua, its function wake): every script that frees a lock or a
// place among its waiters starts with it, pkg/lock's releases and
// pkg/inspect's force-release alike, so that a forced release hands off as
// a release does.
//
//go:embed wake.lua
var WakeLua string
