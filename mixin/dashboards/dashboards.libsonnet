(import 'overview.libsonnet') + (import 'backend.libsonnet')
