package cmd

import (
	"reflect"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestClientOptionsBothTypes: clientOptions gives a single-server client and
// a Cluster or Sentinel client the same settings, each of the type go-redis
// declares.
func TestClientOptionsBothTypes(t *testing.T) {
	g := &Globals{Timeout: 1234 * time.Millisecond}
	single, universal := &redis.Options{}, &redis.UniversalOptions{}
	clientOptions(g, single)
	clientOptions(g, universal)
	want := redis.Options{
		DialTimeout: g.Timeout, ReadTimeout: g.Timeout, WriteTimeout: g.Timeout,
		ContextTimeoutEnabled: true, MaxRetries: -1, PoolSize: 16, PipelinePoolSize: -1,
		DisableIdentity: true, Protocol: 2, DialerRetries: 1, DialerRetryTimeout: 50 * time.Millisecond,
	}
	if !reflect.DeepEqual(*single, want) {
		t.Errorf("*redis.Options: got %+v, want %+v", *single, want)
	}
	u := reflect.ValueOf(universal).Elem()
	for _, s := range clientSettings(g.Timeout) {
		if got, w := u.FieldByName(s.field).Interface(), reflect.ValueOf(want).FieldByName(s.field).Interface(); got != w {
			t.Errorf("*redis.UniversalOptions.%s = %v, want %v", s.field, got, w)
		}
	}
}
