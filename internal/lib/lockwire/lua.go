package lockwire

import _ "embed"

// ValueLua is the Lua prelude that builds, reads and edits stored values
// (value_head.lua, then value.lua): every script that touches a value
// starts with it, before its other preludes. It calls no Redis command, so
// the lists of commands the scripts need (doctor's ACL check) do not change
// with it. A script whose usual case runs before its preludes puts that
// case between ValueHeadLua, the functions it needs, and ValueRestLua.
var ValueLua = ValueHeadLua + ValueRestLua

var (
	// ValueHeadLua is value_head.lua, ValueLua's first part.
	//
	//go:embed value_head.lua
	ValueHeadLua string
	// ValueRestLua is value.lua, ValueLua's second part.
	//
	//go:embed value.lua
	ValueRestLua string
)

// WakeLua is the Lua prelude that decides whom a freed lock wakes and wakes
// them (wake.lua, its function wake): every script that frees a lock or a
// place among its waiters starts with it, pkg/lock's releases and
// pkg/inspect's force-release alike, so that a forced release hands off as
// a release does.
//
//go:embed wake.lua
var WakeLua string
