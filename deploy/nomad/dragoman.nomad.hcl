# Dragoman on Nomad: one group per role, the same binary in each.
#
#   nomad var put nomad/jobs/dragoman database_url=postgres://… redis_url=redis://… \
#     secret_key="$(openssl rand -base64 32)" \
#     s3_access_key_id=… s3_secret_access_key=…
#   nomad var put nomad/jobs/dragoman/pipeline OPENAI_API_KEY=sk-…
#   nomad var put nomad/jobs/dragoman-migrate database_url=postgres://…
#   nomad job run deploy/nomad/dragoman-migrate.nomad.hcl   # first, and on every upgrade
#   nomad job run -var image=REGISTRY/dragoman:TAG -var s3_endpoint=https://… \
#     deploy/nomad/dragoman.nomad.hcl
#
# Service discovery is Nomad's own (no Consul needed): a role reaches
# another through a template that picks one healthy instance per
# allocation (rendezvous hashing, so allocations spread over instances and
# keep their pick while it lives). Secrets come from Nomad Variables. The
# blobs are in S3-compatible object storage (a bucket created beforehand);
# allocations share no volume, each has only a scratch tmpfs. A stopping task
# drains (`dragoman check-config` prints how long it takes: 25 s with the
# default lease), within its 30 s kill timeout; raising
# DRAGOMAN_DRAIN_SECONDS means raising kill_timeout, and the clients'
# max_kill_timeout (30 s by default) with it. docs/deploy.md walks through it.

variable "image" {
  type        = string
  description = "The dragoman image, e.g. registry.example.com/dragoman:0.1.0"
  default     = "dragoman:0.1.0"
}

variable "blob_url" {
  type        = string
  description = "Where the blobs go: s3://BUCKET/PREFIX, the bucket created beforehand"
  default     = "s3://dragoman/blobs"
}

variable "s3_endpoint" {
  type        = string
  description = "The S3 API's endpoint (MinIO, Ceph RGW, https://storage.googleapis.com…); empty for AWS S3 itself"
  default     = "https://s3.example.internal"
}

variable "s3_region" {
  type        = string
  description = "The bucket's region (auto for Google Cloud Storage; any for MinIO unless it sets one)"
  default     = "us-east-1"
}

variable "s3_allow_http" {
  type        = string
  description = "\"true\" when s3_endpoint is a plain-http URL"
  default     = "false"
}

variable "public_host" {
  type        = string
  description = "Host name the gateway is published under (Traefik tags)"
  default     = "dragoman.example.com"
}

locals {
  # The installation's secrets, from `nomad var put nomad/jobs/dragoman …`.
  secrets_env = <<-EOT
  {{ with nomadVar "nomad/jobs/dragoman" -}}
  DRAGOMAN_DATABASE_URL={{ .database_url }}
  DRAGOMAN_REDIS_URL={{ .redis_url }}
  DRAGOMAN_SECRET_KEY={{ .secret_key }}
  AWS_ACCESS_KEY_ID={{ .s3_access_key_id }}
  AWS_SECRET_ACCESS_KEY={{ .s3_secret_access_key }}
  {{- end }}
  EOT

  # Where the blobs are, from the variables above. With no endpoint, the
  # object store is AWS S3 itself, found from the region.
  object_store_env = <<-EOT
  DRAGOMAN_BLOB_URL=${var.blob_url}
  AWS_REGION=${var.s3_region}
  AWS_ALLOW_HTTP=${var.s3_allow_http}
  {{ with "${var.s3_endpoint}" }}AWS_ENDPOINT_URL={{ . }}{{ end }}
  EOT

  # Settings shared by every role (README.md, "Configuration").
  lease_seconds = "30"
}

job "dragoman" {
  type        = "service"
  datacenters = ["*"]

  # One group at a time, each new allocation healthy (its checks passing)
  # for 10 s before the next; a deployment that does not get there rolls back.
  update {
    max_parallel      = 1
    health_check      = "checks"
    min_healthy_time  = "10s"
    healthy_deadline  = "5m"
    progress_deadline = "10m"
    auto_revert       = true
  }

  group "gateway" {
    # HTTP for the clients: stateless, any count. /health asks every role, the
    # database and Redis. The shutdown delay takes it out of discovery before
    # it is told to stop.
    count = 2

    network {
      mode = "bridge"
      port "http" {
        to = 8080
      }
      port "metrics" {
        to = 9464
      }
    }

    service {
      provider = "nomad"
      name     = "dragoman-gateway"
      port     = "http"
      tags = [
        "traefik.enable=true",
        "traefik.http.routers.dragoman.rule=Host(`${var.public_host}`)",
      ]

      check {
        name     = "health"
        type     = "http"
        path     = "/health"
        interval = "10s"
        timeout  = "4s"
      }
    }

    # /metrics, for Prometheus' nomad_sd_configs (docs/operations.md).
    service {
      provider = "nomad"
      name     = "dragoman-metrics"
      port     = "metrics"
      tags     = ["dragoman"]
    }

    task "dragoman" {
      driver         = "docker"
      user           = "10001"
      kill_signal    = "SIGTERM"
      kill_timeout   = "30s"
      shutdown_delay = "5s"

      config {
        image           = var.image
        args            = ["serve", "--no-migrate"]
        readonly_rootfs = true
        cap_drop        = ["all"]
        security_opt    = ["no-new-privileges"]

        mount {
          type   = "tmpfs"
          target = "/tmp"
          tmpfs_options {
            size = 536870912
          }
        }

        # The working folder (DRAGOMAN_DATA_DIR), scratch of this task.
        mount {
          type   = "tmpfs"
          target = "/var/lib/dragoman"
          tmpfs_options {
            size = 67108864
          }
        }
      }

      env {
        DRAGOMAN_ROLES          = "gateway"
        DRAGOMAN_LEASE_SECONDS  = local.lease_seconds
        DRAGOMAN_METRICS_LISTEN = "0.0.0.0:9464"
        DRAGOMAN_LISTEN         = "0.0.0.0:8080"
        DRAGOMAN_GRPC_LISTEN    = "off"
        RUST_LOG                = "info"
      }

      template {
        destination = "secrets/dragoman.env"
        env         = true
        change_mode = "restart"
        data        = local.secrets_env
      }

      template {
        destination = "local/object-store.env"
        env         = true
        change_mode = "restart"
        data        = local.object_store_env
      }

      # Where the roles it calls are: one instance each, picked per
      # allocation; a new pick restarts the task.
      template {
        destination = "local/services.env"
        env         = true
        change_mode = "restart"
        splay       = "30s"
        data        = <<-EOT
        {{ range nomadService 1 (env "NOMAD_ALLOC_ID") "dragoman-scheduler" -}}
        DRAGOMAN_SCHEDULER_URL=http://{{ .Address }}:{{ .Port }}
        {{ end -}}
        {{ range nomadService 1 (env "NOMAD_ALLOC_ID") "dragoman-pipeline" -}}
        DRAGOMAN_PIPELINE_URL=http://{{ .Address }}:{{ .Port }}
        {{ end -}}
        {{ range nomadService 1 (env "NOMAD_ALLOC_ID") "dragoman-delivery" -}}
        DRAGOMAN_DELIVERY_URL=http://{{ .Address }}:{{ .Port }}
        {{ end -}}
        {{ range nomadService 1 (env "NOMAD_ALLOC_ID") "dragoman-memory" -}}
        DRAGOMAN_MEMORY_URL=http://{{ .Address }}:{{ .Port }}
        {{ end -}}
        EOT
      }

      resources {
        cpu        = 200
        memory     = 256
        memory_max = 1024
      }
    }
  }

  group "scheduler" {
    # Intake, lifecycle, fair queue: stateless over the database.
    count = 2

    network {
      mode = "bridge"
      port "grpc" {
        to = 8081
      }
      port "metrics" {
        to = 9464
      }
    }

    service {
      provider = "nomad"
      name     = "dragoman-scheduler"
      port     = "grpc"

      # Nomad's own checks speak HTTP and TCP; with Consul as the provider,
      # `type = "grpc"` and `grpc_service = "dragoman.internal.v1.<Role>"` ask the
      # standard gRPC health service instead.
      check {
        name     = "grpc-port"
        type     = "tcp"
        interval = "10s"
        timeout  = "3s"
      }
    }

    # /metrics, for Prometheus' nomad_sd_configs (docs/operations.md).
    service {
      provider = "nomad"
      name     = "dragoman-metrics"
      port     = "metrics"
      tags     = ["dragoman"]
    }

    task "dragoman" {
      driver       = "docker"
      user         = "10001"
      kill_signal  = "SIGTERM"
      kill_timeout = "30s"

      config {
        image           = var.image
        args            = ["serve", "--no-migrate"]
        readonly_rootfs = true
        cap_drop        = ["all"]
        security_opt    = ["no-new-privileges"]

        mount {
          type   = "tmpfs"
          target = "/tmp"
          tmpfs_options {
            size = 536870912
          }
        }

        # The working folder (DRAGOMAN_DATA_DIR), scratch of this task.
        mount {
          type   = "tmpfs"
          target = "/var/lib/dragoman"
          tmpfs_options {
            size = 67108864
          }
        }
      }

      env {
        DRAGOMAN_ROLES          = "scheduler"
        DRAGOMAN_LEASE_SECONDS  = local.lease_seconds
        DRAGOMAN_METRICS_LISTEN = "0.0.0.0:9464"
        DRAGOMAN_GRPC_LISTEN    = "0.0.0.0:8081"
        RUST_LOG                = "info"
      }

      template {
        destination = "secrets/dragoman.env"
        env         = true
        change_mode = "restart"
        data        = local.secrets_env
      }

      template {
        destination = "local/object-store.env"
        env         = true
        change_mode = "restart"
        data        = local.object_store_env
      }

      resources {
        cpu        = 200
        memory     = 256
        memory_max = 1024
      }
    }
  }

  group "pipeline" {
    # Workers. On SIGTERM a worker stops leasing, and its jobs end or are
    # handed back within the drain deadline. The scaling block is read by the
    # Nomad Autoscaler.
    count = 2

    scaling {
      enabled = true
      min     = 2
      max     = 10
    }

    network {
      mode = "bridge"
      port "grpc" {
        to = 8081
      }
      port "metrics" {
        to = 9464
      }
    }

    service {
      provider = "nomad"
      name     = "dragoman-pipeline"
      port     = "grpc"

      # Nomad's own checks speak HTTP and TCP; with Consul as the provider,
      # `type = "grpc"` and `grpc_service = "dragoman.internal.v1.<Role>"` ask the
      # standard gRPC health service instead.
      check {
        name     = "grpc-port"
        type     = "tcp"
        interval = "10s"
        timeout  = "3s"
      }
    }

    # /metrics, for Prometheus' nomad_sd_configs (docs/operations.md).
    service {
      provider = "nomad"
      name     = "dragoman-metrics"
      port     = "metrics"
      tags     = ["dragoman"]
    }

    task "dragoman" {
      driver       = "docker"
      user         = "10001"
      kill_signal  = "SIGTERM"
      kill_timeout = "30s"

      config {
        image           = var.image
        args            = ["serve", "--no-migrate"]
        readonly_rootfs = true
        cap_drop        = ["all"]
        security_opt    = ["no-new-privileges"]

        mount {
          type   = "tmpfs"
          target = "/tmp"
          tmpfs_options {
            size = 536870912
          }
        }

        # The working folder (DRAGOMAN_DATA_DIR), scratch of this task.
        mount {
          type   = "tmpfs"
          target = "/var/lib/dragoman"
          tmpfs_options {
            size = 67108864
          }
        }
      }

      env {
        DRAGOMAN_ROLES          = "pipeline"
        DRAGOMAN_LEASE_SECONDS  = local.lease_seconds
        DRAGOMAN_METRICS_LISTEN = "0.0.0.0:9464"
        DRAGOMAN_GRPC_LISTEN    = "0.0.0.0:8081"
        RUST_LOG                = "info"
      }

      template {
        destination = "secrets/dragoman.env"
        env         = true
        change_mode = "restart"
        data        = local.secrets_env
      }

      template {
        destination = "local/object-store.env"
        env         = true
        change_mode = "restart"
        data        = local.object_store_env
      }

      # Provider API keys, one item per variable, named as given to
      # `dragoman provider add --api-key-env NAME`:
      #   nomad var put nomad/jobs/dragoman/pipeline OPENAI_API_KEY=sk-…
      # Only this group reads them.
      template {
        destination = "secrets/providers.env"
        env         = true
        change_mode = "restart"
        data        = <<-EOT
        {{ range $name, $value := nomadVar "nomad/jobs/dragoman/pipeline" -}}
        {{ $name }}={{ $value }}
        {{ end -}}
        EOT
      }

      # Where the roles it calls are: one instance each, picked per
      # allocation; a new pick restarts the task.
      template {
        destination = "local/services.env"
        env         = true
        change_mode = "restart"
        splay       = "30s"
        data        = <<-EOT
        {{ range nomadService 1 (env "NOMAD_ALLOC_ID") "dragoman-scheduler" -}}
        DRAGOMAN_SCHEDULER_URL=http://{{ .Address }}:{{ .Port }}
        {{ end -}}
        {{ range nomadService 1 (env "NOMAD_ALLOC_ID") "dragoman-delivery" -}}
        DRAGOMAN_DELIVERY_URL=http://{{ .Address }}:{{ .Port }}
        {{ end -}}
        {{ range nomadService 1 (env "NOMAD_ALLOC_ID") "dragoman-memory" -}}
        DRAGOMAN_MEMORY_URL=http://{{ .Address }}:{{ .Port }}
        {{ end -}}
        EOT
      }

      resources {
        cpu        = 500
        memory     = 256
        memory_max = 1024
      }
    }
  }

  group "delivery" {
    # Results and webhooks, taken under leases: replicas never do the same work.
    count = 2

    network {
      mode = "bridge"
      port "grpc" {
        to = 8081
      }
      port "metrics" {
        to = 9464
      }
    }

    service {
      provider = "nomad"
      name     = "dragoman-delivery"
      port     = "grpc"

      # Nomad's own checks speak HTTP and TCP; with Consul as the provider,
      # `type = "grpc"` and `grpc_service = "dragoman.internal.v1.<Role>"` ask the
      # standard gRPC health service instead.
      check {
        name     = "grpc-port"
        type     = "tcp"
        interval = "10s"
        timeout  = "3s"
      }
    }

    # /metrics, for Prometheus' nomad_sd_configs (docs/operations.md).
    service {
      provider = "nomad"
      name     = "dragoman-metrics"
      port     = "metrics"
      tags     = ["dragoman"]
    }

    task "dragoman" {
      driver       = "docker"
      user         = "10001"
      kill_signal  = "SIGTERM"
      kill_timeout = "30s"

      config {
        image           = var.image
        args            = ["serve", "--no-migrate"]
        readonly_rootfs = true
        cap_drop        = ["all"]
        security_opt    = ["no-new-privileges"]

        mount {
          type   = "tmpfs"
          target = "/tmp"
          tmpfs_options {
            size = 536870912
          }
        }

        # The working folder (DRAGOMAN_DATA_DIR), scratch of this task.
        mount {
          type   = "tmpfs"
          target = "/var/lib/dragoman"
          tmpfs_options {
            size = 67108864
          }
        }
      }

      env {
        DRAGOMAN_ROLES          = "delivery"
        DRAGOMAN_LEASE_SECONDS  = local.lease_seconds
        DRAGOMAN_METRICS_LISTEN = "0.0.0.0:9464"
        DRAGOMAN_GRPC_LISTEN    = "0.0.0.0:8081"
        RUST_LOG                = "info"
      }

      template {
        destination = "secrets/dragoman.env"
        env         = true
        change_mode = "restart"
        data        = local.secrets_env
      }

      template {
        destination = "local/object-store.env"
        env         = true
        change_mode = "restart"
        data        = local.object_store_env
      }

      resources {
        cpu        = 300
        memory     = 256
        memory_max = 1024
      }
    }
  }

  group "memory" {
    # Glossaries, narrative memory, context bundles: stateless over the database.
    count = 2

    network {
      mode = "bridge"
      port "grpc" {
        to = 8081
      }
      port "metrics" {
        to = 9464
      }
    }

    service {
      provider = "nomad"
      name     = "dragoman-memory"
      port     = "grpc"

      # Nomad's own checks speak HTTP and TCP; with Consul as the provider,
      # `type = "grpc"` and `grpc_service = "dragoman.internal.v1.<Role>"` ask the
      # standard gRPC health service instead.
      check {
        name     = "grpc-port"
        type     = "tcp"
        interval = "10s"
        timeout  = "3s"
      }
    }

    # /metrics, for Prometheus' nomad_sd_configs (docs/operations.md).
    service {
      provider = "nomad"
      name     = "dragoman-metrics"
      port     = "metrics"
      tags     = ["dragoman"]
    }

    task "dragoman" {
      driver       = "docker"
      user         = "10001"
      kill_signal  = "SIGTERM"
      kill_timeout = "30s"

      config {
        image           = var.image
        args            = ["serve", "--no-migrate"]
        readonly_rootfs = true
        cap_drop        = ["all"]
        security_opt    = ["no-new-privileges"]

        mount {
          type   = "tmpfs"
          target = "/tmp"
          tmpfs_options {
            size = 536870912
          }
        }

        # The working folder (DRAGOMAN_DATA_DIR), scratch of this task.
        mount {
          type   = "tmpfs"
          target = "/var/lib/dragoman"
          tmpfs_options {
            size = 67108864
          }
        }
      }

      env {
        DRAGOMAN_ROLES          = "memory"
        DRAGOMAN_LEASE_SECONDS  = local.lease_seconds
        DRAGOMAN_METRICS_LISTEN = "0.0.0.0:9464"
        DRAGOMAN_GRPC_LISTEN    = "0.0.0.0:8081"
        RUST_LOG                = "info"
      }

      template {
        destination = "secrets/dragoman.env"
        env         = true
        change_mode = "restart"
        data        = local.secrets_env
      }

      template {
        destination = "local/object-store.env"
        env         = true
        change_mode = "restart"
        data        = local.object_store_env
      }

      resources {
        cpu        = 200
        memory     = 128
        memory_max = 512
      }
    }
  }
}
