"""The first schema: machines, runs, run_images, cells, oracle_records, samples
(:mod:`proofdiff.history.schema`).

Revision ID: 0001
Revises: none
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0001'
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Upgrade to this revision."""
    op.create_table('machines',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('fingerprint', sa.String(length=64), nullable=False),
    sa.Column('host', sa.String(length=255), nullable=False),
    sa.Column('gpu_model', sa.String(length=255), nullable=False),
    sa.Column('gpu_driver', sa.String(length=64), nullable=False),
    sa.Column('cpus', sa.Integer(), nullable=False),
    sa.Column('mem_gib', sa.Integer(), nullable=False),
    sa.Column('facts', sa.JSON(), nullable=False),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('fingerprint')
    )
    op.create_table('runs',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('run_id', sa.String(length=255), nullable=False),
    sa.Column('command', sa.String(length=32), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('stored_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('wall_s', sa.Float(), nullable=False),
    sa.Column('machine_id', sa.Integer(), nullable=False),
    sa.Column('commit', sa.String(length=64), nullable=False),
    sa.Column('commit_info', sa.JSON(), nullable=False),
    sa.Column('verdict', sa.String(length=32), nullable=False),
    sa.Column('verdict_line', sa.Text(), nullable=False),
    sa.Column('exit_code', sa.Integer(), nullable=False),
    sa.Column('errors', sa.JSON(), nullable=False),
    sa.Column('profiles', sa.JSON(), nullable=False),
    sa.Column('workloads', sa.JSON(), nullable=False),
    sa.Column('suites', sa.JSON(), nullable=False),
    sa.ForeignKeyConstraint(['machine_id'], ['machines.id'], ),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('run_id')
    )
    with op.batch_alter_table('runs', schema=None) as batch_op:
        batch_op.create_index('ix_runs_machine_created', ['machine_id', 'created_at'], unique=False)

    op.create_table('cells',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('run_pk', sa.Integer(), nullable=False),
    sa.Column('profile', sa.String(length=255), nullable=False),
    sa.Column('workload', sa.String(length=255), nullable=False),
    sa.Column('image_tag', sa.String(length=512), nullable=False),
    sa.Column('image_digest', sa.String(length=255), nullable=False),
    sa.Column('runtime', sa.String(length=32), nullable=False),
    sa.Column('start_to_ready_ms', sa.Float(), nullable=True),
    sa.Column('errors', sa.JSON(), nullable=False),
    sa.ForeignKeyConstraint(['run_pk'], ['runs.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('cells', schema=None) as batch_op:
        batch_op.create_index('ix_cells_run_profile_workload', ['run_pk', 'profile', 'workload'], unique=False)

    op.create_table('oracle_records',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('run_pk', sa.Integer(), nullable=False),
    sa.Column('suite', sa.String(length=64), nullable=False),
    sa.Column('oracle', sa.String(length=128), nullable=False),
    sa.Column('profile', sa.String(length=255), nullable=False),
    sa.Column('workload', sa.String(length=255), nullable=False),
    sa.Column('image', sa.String(length=512), nullable=False),
    sa.Column('outcome', sa.String(length=32), nullable=False),
    sa.Column('record', sa.JSON(), nullable=False),
    sa.ForeignKeyConstraint(['run_pk'], ['runs.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('oracle_records', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_oracle_records_run_pk'), ['run_pk'], unique=False)

    op.create_table('run_images',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('run_pk', sa.Integer(), nullable=False),
    sa.Column('role', sa.String(length=32), nullable=False),
    sa.Column('tag', sa.String(length=512), nullable=False),
    sa.Column('digest', sa.String(length=255), nullable=False),
    sa.ForeignKeyConstraint(['run_pk'], ['runs.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('run_images', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_run_images_run_pk'), ['run_pk'], unique=False)

    op.create_table('samples',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('cell_id', sa.Integer(), nullable=False),
    sa.Column('metric', sa.String(length=64), nullable=False),
    sa.Column('unit', sa.String(length=16), nullable=False),
    sa.Column('value', sa.Float(), nullable=False),
    sa.Column('flow', sa.String(length=64), nullable=False),
    sa.Column('label', sa.String(length=255), nullable=False),
    sa.Column('seq', sa.Integer(), nullable=False),
    sa.Column('job', sa.String(length=255), nullable=False),
    sa.Column('status', sa.String(length=32), nullable=False),
    sa.Column('valid', sa.Boolean(), nullable=True),
    sa.Column('warmup', sa.Boolean(), nullable=False),
    sa.Column('t_unix_s', sa.Float(), nullable=True),
    sa.ForeignKeyConstraint(['cell_id'], ['cells.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('samples', schema=None) as batch_op:
        batch_op.create_index('ix_samples_cell_metric', ['cell_id', 'metric'], unique=False)



def downgrade() -> None:
    """Back to the previous revision."""
    with op.batch_alter_table('samples', schema=None) as batch_op:
        batch_op.drop_index('ix_samples_cell_metric')

    op.drop_table('samples')
    with op.batch_alter_table('run_images', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_run_images_run_pk'))

    op.drop_table('run_images')
    with op.batch_alter_table('oracle_records', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_oracle_records_run_pk'))

    op.drop_table('oracle_records')
    with op.batch_alter_table('cells', schema=None) as batch_op:
        batch_op.drop_index('ix_cells_run_profile_workload')

    op.drop_table('cells')
    with op.batch_alter_table('runs', schema=None) as batch_op:
        batch_op.drop_index('ix_runs_machine_created')

    op.drop_table('runs')
    op.drop_table('machines')
