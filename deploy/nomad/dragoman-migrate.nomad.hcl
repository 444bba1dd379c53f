# The database migrations of an image version, as a batch job run to
# completion before the roles (deploy/nomad/dragoman.nomad.hcl) start or
# are updated:
#
#   nomad var put nomad/jobs/dragoman-migrate database_url=postgres://…
#   nomad job run -var image=REGISTRY/dragoman:TAG deploy/nomad/dragoman-migrate.nomad.hcl
#   nomad job status dragoman-migrate   # wait for the allocation to be complete
#
# The roles run with --no-migrate, so no two processes ever migrate at once.

variable "image" {
  type        = string
  description = "The dragoman image, the same as the roles'"
  default     = "dragoman:0.1.0"
}

job "dragoman-migrate" {
  type        = "batch"
  datacenters = ["*"]

  group "migrate" {
    count = 1

    # A failed migration is looked at by a person, not retried for ever.
    restart {
      attempts = 2
      delay    = "15s"
      mode     = "fail"
    }

    reschedule {
      attempts  = 0
      unlimited = false
    }

    task "migrate" {
      driver = "docker"
      user   = "10001"

      config {
        image           = var.image
        args            = ["migrate"]
        readonly_rootfs = true
        cap_drop        = ["all"]
        security_opt    = ["no-new-privileges"]
      }

      env {
        RUST_LOG = "info"
      }

      template {
        destination = "secrets/database.env"
        env         = true
        data        = <<-EOT
        {{ with nomadVar "nomad/jobs/dragoman-migrate" -}}
        DRAGOMAN_DATABASE_URL={{ .database_url }}
        {{- end }}
        EOT
      }

      resources {
        cpu        = 200
        memory     = 128
        memory_max = 256
      }
    }
  }
}
