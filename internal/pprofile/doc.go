// Package pprofile renders a profile as the P model's constants file, models/p/PSrc/Profile_gen.p:
// one P function per row of [profile.Choices], returning the choice's value under the profile.
//
// It is the generator of that file, split from package gen so that package bridge, which gen
// imports, can compile its P projects (the observed drivers, the streaming oracle) under a
// trace's own profile: the spec monitors take the profile's rules (the lease-live rule above
// all) from models/p/PSrc/Rules.p, which reads these constants. It imports nothing but
// package profile.
package pprofile
