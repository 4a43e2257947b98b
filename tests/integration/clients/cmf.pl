#!/usr/bin/perl
# SPDX-License-Identifier: BSD-3-Clause
# Cache::Memcached::Fast (XS) against a server: prints "ok"/"not ok" lines
# and exits non-zero on any failure. Usage: cmf.pl HOST:PORT
use strict;
use warnings;
use Cache::Memcached::Fast;

my $addr = shift or die "usage: $0 host:port\n";
my $m = Cache::Memcached::Fast->new({ servers => [$addr], utf8 => 0,
                                      compress_threshold => -1, nowait => 0 });
my ($n, $bad) = (0, 0);
sub ok { my ($c, $what) = @_; $n++; print(($c ? "ok" : "not ok"), " $n - $what\n"); $bad++ unless $c; }

my $bin = join('', map { chr($_ % 256) } 0 .. 70000);
ok($m->set("pk1", "hello"), "set");
ok(($m->get("pk1") // '') eq "hello", "get");
ok($m->set("pk2", $bin), "set binary 70001 B");
ok(($m->get("pk2") // '') eq $bin, "get binary");
ok($m->add("pk1", "x") == 0, "add existing fails");
ok($m->add("pk3", "x"), "add new");
ok($m->replace("pk3", "y"), "replace");
ok($m->append("pk3", "z"), "append");
ok($m->prepend("pk3", "w"), "prepend");
ok(($m->get("pk3") // '') eq "wyz", "append/prepend result");
my $h = $m->get_multi(map { "pk$_" } 1 .. 5);
ok(keys(%$h) == 3 && $h->{pk1} eq "hello", "get_multi");
$m->set("pk4", 10);
ok($m->incr("pk4", 5) == 15, "incr");
ok($m->decr("pk4", 20) == 0, "decr floors at 0");
my $g = $m->gets("pk1");
ok(ref $g eq 'ARRAY', "gets");
ok($m->cas("pk1", $g->[0], "new"), "cas ok");
ok(!$m->cas("pk1", $g->[0], "newer"), "cas stale fails");
ok($m->delete("pk1"), "delete");
ok(!defined $m->get("pk1"), "deleted");
ok($m->touch("pk3", 100), "touch");
my $vers = $m->server_versions;
ok(scalar(values %$vers) == 1, "version");
my %many = map { ("mk$_" => "v$_") } 1 .. 500;
$m->set_multi(map { [$_, $many{$_}] } keys %many);
my $got = $m->get_multi(keys %many);
ok(scalar(grep { ($got->{$_} // '') eq $many{$_} } keys %many) == 500, "set_multi/get_multi 500");
ok($m->flush_all, "flush_all");
ok(!defined $m->get("pk3"), "flushed");
print "1..$n\n";
exit($bad ? 1 : 0);
