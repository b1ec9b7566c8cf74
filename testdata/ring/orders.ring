# fusee ring file: one namespace's placement policy (docs/rings.md).
# Change it with `fusee ring` commands: published rings are sealed.
fusee-ring 2
namespace orders
revision 4
current-epoch 2

cell cellA fingerprint=jdbc-5f1c0e
cell cellB fingerprint=jdbc-9a03d2
cell cellC

epoch 0 retired shards=0-1023
  0-1023 cellA

epoch 1 draining shards=0-1023
  0-511 cellA
  512-1023 cellB

epoch 2 open shards=0-1023
  0-341 cellA
  342-511 cellC@eu-west
  512-852 cellB
  853-1023 cellC@eu-west
