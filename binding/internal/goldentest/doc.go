// Package goldentest checks the domain XML the binding renderers produce
// against golden files under testdata/<Test>/<case>.xml: the rendered
// domain is marshalled, compared with the file (or written to it with the
// test package's -update flag), round-tripped through libvirtxml
// Unmarshal and Marshal, validated with virt-xml-validate against
// libvirt's domain schema, and defined in libvirt's in-process test driver
// (virsh -c test:///default), which applies libvirt's own parser and
// validation.
//
// virt-xml-validate and virsh come with the Debian packages
// libvirt-clients and libxml2-utils; without them those steps skip
// through testutil.Skip (a failure under VIRTNET_REQUIRE_KERNEL=1).
package goldentest
